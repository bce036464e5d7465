"""The admission policy as data: which modules, members, names and attributes a submission may not use.

Why a denylist of modules rather than an allowlist: the sandbox only offers the standard library and
`miner_sdk`, so the relevant universe is the stdlib, and SPEC §6 states the policy as banned imports.
What makes the denylist hold is the second half: every way of reaching a module or a builtin *without*
naming it (dynamic attributes, dunder walks, frames, module attributes, code objects, import hooks) is
itself banned, so a banned thing can only be reached by naming it, and names are checked.
"""

from __future__ import annotations

# -- imports ---------------------------------------------------------------------------------------------
BANNED_MODULES: frozenset[str] = frozenset(
    {
        # SPEC §6
        "subprocess", "socket", "http", "requests", "ctypes", "cffi", "pickle", "shutil", "base64",
        "binascii", "codecs", "zlib",
        # issue 12: code loading and interpreter internals
        "importlib", "imp", "builtins", "__builtin__", "runpy", "code", "codeop", "multiprocessing",
        "marshal", "gc", "signal",
        # processes, terminals, low-level OS access
        "posix", "nt", "pty", "tty", "termios", "fcntl", "resource", "mmap", "select", "selectors",
        "asyncio", "pipes", "mailcap", "webbrowser", "antigravity", "curses", "msvcrt", "winreg",
        "winsound", "syslog", "ossaudiodev",
        # network clients and servers
        "ssl", "socketserver", "ftplib", "smtplib", "smtpd", "poplib", "imaplib", "nntplib", "telnetlib",
        "xmlrpc", "wsgiref", "cgi", "cgitb", "asyncore", "asynchat", "urllib3", "httpx", "aiohttp",
        "websocket", "websockets", "paramiko", "pycurl", "grpc", "netrc", "email",
        # serialisation that runs code, and decoders of encoded blobs
        "dill", "cloudpickle", "copyreg", "pickletools", "gzip", "bz2", "lzma", "zipimport", "zipapp", "uu", "quopri", "plistlib", "encodings",
        # file writers and databases
        "fileinput", "mailbox", "py_compile", "compileall", "wave", "aifc", "sunau",
        # import machinery by name, debuggers, code runners
        "pkgutil", "pydoc", "site", "modulefinder", "distutils", "setuptools", "pip", "ensurepip", "venv",
        "unittest", "doctest", "pdb", "bdb", "trace", "cProfile", "profile", "timeit", "rlcompleter",
        "readline", "dis", "idlelib", "tkinter", "turtle", "turtledemo", "lib2to3",
        # CPython's own test package: test.support.import_helper imports any module by name
        "test",
        # the evaluator itself
        "shoparena", "miner_runner",
    }
)  # fmt: skip
"""Top-level packages banned whole (`import x`, `import x.y`, `from x import …`)."""

BANNED_SUBMODULES: frozenset[str] = frozenset({"logging.config", "logging.handlers", "xml.sax", "xml.dom"})
"""Submodules banned although their package is allowed (dictConfig imports by name; handlers and
xml.sax reach the network)."""

EVALUATED_ANNOTATION = "security.evaluated_annotation"
FRAME_ACCESS = "security.frame_access"
FILE_WRITE = "security.file_write"
PROCESS_POOL = "security.process_pool"

FAMILY_MODULES: dict[str, str] = {
    "inspect": FRAME_ACCESS, "faulthandler": FRAME_ACCESS, "tracemalloc": FRAME_ACCESS,
    "tempfile": FILE_WRITE, "zipfile": FILE_WRITE, "tarfile": FILE_WRITE, "sqlite3": FILE_WRITE,
    "dbm": FILE_WRITE, "shelve": FILE_WRITE, "pstats": FILE_WRITE,
    "annotationlib": EVALUATED_ANNOTATION,
}  # fmt: skip
"""Modules banned whole under the rule of the family they belong to (issue 22) rather than banned_import."""

FAMILY_PATHS: dict[str, str] = {
    "typing.get_type_hints": EVALUATED_ANNOTATION, "typing.ForwardRef": EVALUATED_ANNOTATION,
    "typing.evaluate_forward_ref": EVALUATED_ANNOTATION,
    "typing_extensions.get_type_hints": EVALUATED_ANNOTATION,
    "typing_extensions.ForwardRef": EVALUATED_ANNOTATION,
    "typing_extensions.get_annotations": EVALUATED_ANNOTATION,
    "typing_extensions.evaluate_forward_ref": EVALUATED_ANNOTATION,
    "dataclasses.make_dataclass": EVALUATED_ANNOTATION,
    "concurrent.futures.process": PROCESS_POOL,
    "concurrent.futures.ProcessPoolExecutor": PROCESS_POOL,
    "concurrent.futures.InterpreterPoolExecutor": PROCESS_POOL,
    "concurrent.futures.interpreter": PROCESS_POOL,
    "xml.etree.ElementTree.ElementTree": FILE_WRITE, "xml.etree.ElementTree.parse": FILE_WRITE,
    "xml.etree.cElementTree": FILE_WRITE,
    "logging.currentframe": FRAME_ACCESS,
    "pathlib.Path.replace": FILE_WRITE, "pathlib.PosixPath.replace": FILE_WRITE,
    "pathlib.Path.copy": FILE_WRITE, "pathlib.Path.move": FILE_WRITE,
}  # fmt: skip
"""Module members (and submodules) banned under their family's rule: `typing.get_type_hints` evaluates
strings, a process pool runs pickled callables in other interpreters, an ElementTree writes files."""

FAMILY_ALLOWED_MEMBERS: dict[str, tuple[frozenset[str], str, str]] = {
    "traceback": (
        frozenset(
            {"format_exc", "print_exc", "format_exception", "format_exception_only", "print_exception"}
        ),
        FRAME_ACCESS,
        "only traceback.format_exc/print_exc/format_exception(_only)/print_exception are allowed: the rest "
        "walks live frames and their locals",
    ),
}
"""Partly allowed modules whose forbidden members belong to a family: (allowed members, rule, hint)."""

RUNTIME_HOOKS: frozenset[str] = frozenset(
    {"__subclasshook__", "__init_subclass__", "__class_getitem__", "__set_name__", "__instancecheck__",
     "__subclasscheck__", "__mro_entries__", "__prepare__", "__match_args__"}
)  # fmt: skip
"""Dunders Python calls behind the code's back (issubclass, subclassing, `C[x]`, class creation, match
patterns): a file may not define or assign them, except `__match_args__` as a literal tuple of names."""

PATH_METHODS_WITH_ONE_ARGUMENT: frozenset[str] = frozenset({"replace", "copy", "move"})
"""`p.replace(target)` renames a file; str/bytes.replace take two arguments and dict/list.copy none, so one
argument means a path (Path.copy and Path.move are Python 3.14's)."""

TYPE_FACTORIES: frozenset[str] = frozenset(
    {"TypeVar", "NewType", "ParamSpec", "TypeVarTuple", "TypeAliasType", "NamedTuple", "TypedDict",
     "namedtuple"}
)  # fmt: skip
"""Calls whose result may be used as an annotation (a type alias `T = TypeVar("T")`)."""

SHIPPED_DATA_MODULES: frozenset[str] = frozenset({"glob"})
"""Imports that only make sense for reading files beside the agent (an integrity finding)."""

# Partly allowed modules. An allowlist where the module is mostly dangerous, a denylist where it is
# mostly harmless. A member not listed is fine; the module itself may not be passed around as a value.
ALLOWED_MEMBERS: dict[str, frozenset[str]] = {
    "os": frozenset(
        {
            "path", "getenv", "environ", "sep", "altsep", "extsep", "linesep", "pathsep", "curdir",
            "pardir", "devnull", "name", "cpu_count", "fspath", "PathLike",
        }
    ),
    "io": frozenset(
        {
            "StringIO", "BytesIO", "TextIOWrapper", "IOBase", "RawIOBase", "BufferedIOBase", "TextIOBase",
            "UnsupportedOperation", "SEEK_SET", "SEEK_CUR", "SEEK_END", "DEFAULT_BUFFER_SIZE",
        }
    ),
    "urllib": frozenset({"parse"}),
}  # fmt: skip
ALLOWED_HINTS: dict[str, str] = {
    "os": "only os.path, os.getenv, os.environ and os's constants are allowed",
    "io": "only io.StringIO, io.BytesIO, io.TextIOWrapper and the base classes are allowed",
    "urllib": "only urllib.parse is allowed",
}
BANNED_MEMBERS: dict[str, frozenset[str]] = {
    "sys": frozenset(
        {
            "modules", "meta_path", "path_hooks", "path_importer_cache", "path", "settrace", "setprofile",
            "gettrace", "getprofile", "breakpointhook", "displayhook", "excepthook", "addaudithook",
            "call_tracing", "exc_info", "exception", "last_traceback", "last_value", "last_type",
            "unraisablehook", "executable", "orig_argv", "base_prefix", "prefix", "exec_prefix",
            "set_int_max_str_digits",
        }
    ),
    "types": frozenset(
        {
            "FunctionType", "LambdaType", "CodeType", "MethodType", "ModuleType", "CellType", "FrameType",
            "TracebackType", "new_class", "prepare_class", "resolve_bases", "coroutine",
            "BuiltinFunctionType", "BuiltinMethodType", "MethodWrapperType", "WrapperDescriptorType",
        }
    ),
    "threading": frozenset({"settrace", "setprofile", "settrace_all_threads", "setprofile_all_threads"}),
    "string": frozenset({"Formatter"}),
    "logging": frozenset({"config", "handlers", "FileHandler", "makeLogRecord"}),
    "pathlib": frozenset(),
    "operator": frozenset(),
}  # fmt: skip
SHIPPED_DATA_MEMBERS: dict[str, frozenset[str]] = {"sys": frozenset({"argv"})}
"""Members that point at the agent's own file (miner_runner sets argv[0] to it)."""

RESTRICTED_MODULES: frozenset[str] = frozenset(
    {"os", "io", "urllib", "sys", "types", "threading", "typing", "string", "traceback"}
)
"""Modules whose members are checked, so the module object must not escape as a value."""

MODULE_NAMES_AS_ATTRIBUTES: frozenset[str] = (
    BANNED_MODULES | RESTRICTED_MODULES | frozenset(FAMILY_MODULES)
) - {"code"}
"""A module's attribute with one of these names is (almost always) that module: `miner_sdk.urllib`,
`json.codecs`, `dataclasses.types`. `code` is left out: `.code` is an everyday attribute name."""

# -- names -------------------------------------------------------------------------------------------
BANNED_CALLS: frozenset[str] = frozenset(
    {"eval", "exec", "compile", "__import__", "vars", "globals", "locals", "breakpoint", "help",
     "execfile", "reload", "input_raw"}
)  # fmt: skip
"""Builtins banned by name wherever they appear: calls, aliases, decorators, default arguments."""

DYNAMIC_ATTRIBUTE_BUILTINS: frozenset[str] = frozenset({"getattr", "setattr", "delattr", "hasattr"})

ORDINARY_DUNDERS: frozenset[str] = frozenset(
    {
        "__init__", "__new__", "__name__", "__qualname__", "__doc__", "__module__", "__version__",
        "__all__", "__slots__", "__post_init__", "__main__", "__future__", "__enter__", "__exit__",
        "__aenter__", "__aexit__", "__iter__", "__next__", "__aiter__", "__anext__", "__await__",
        "__len__", "__length_hint__", "__contains__", "__getitem__", "__setitem__", "__delitem__",
        "__missing__", "__reversed__", "__call__", "__repr__", "__str__", "__format__", "__bytes__",
        "__hash__", "__bool__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
        "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__",
        "__imul__", "__matmul__", "__rmatmul__", "__imatmul__", "__truediv__", "__rtruediv__",
        "__itruediv__", "__floordiv__", "__rfloordiv__", "__ifloordiv__", "__mod__", "__rmod__",
        "__imod__", "__divmod__", "__rdivmod__", "__pow__", "__rpow__", "__ipow__", "__lshift__",
        "__rlshift__", "__ilshift__", "__rshift__", "__rrshift__", "__irshift__", "__and__", "__rand__",
        "__iand__", "__or__", "__ror__", "__ior__", "__xor__", "__rxor__", "__ixor__", "__neg__",
        "__pos__", "__abs__", "__invert__", "__int__", "__float__", "__complex__", "__index__",
        "__round__", "__trunc__", "__floor__", "__ceil__", "__sizeof__", "__copy__", "__deepcopy__",
        "__match_args__", "__author__", "__debug__",
    }
)  # fmt: skip
"""Dunders that are plain protocol methods or descriptive strings, not doors into the interpreter."""

ALLOWED_DUNDER_NAMES: frozenset[str] = frozenset(
    {"__name__", "__doc__", "__module__", "__qualname__", "__slots__", "__all__", "__version__",
     "__author__", "__debug__", "__match_args__"}
)  # fmt: skip
"""Dunder *names* (not attributes) a module may mention; everything else (`__builtins__`, `__loader__`,
`__spec__`, `__class__` inside a method, …) is a door."""
SHIPPED_DATA_NAMES: frozenset[str] = frozenset({"__file__", "__cached__", "__path__"})

FRAME_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "f_trace", "f_trace_lines",
        "f_trace_opcodes", "f_lasti", "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "gi_suspended",
        "cr_frame", "cr_code", "cr_await", "cr_origin", "cr_running", "ag_frame", "ag_code", "ag_await",
        "ag_running", "tb_frame", "tb_next", "tb_lasti", "tb_lineno", "co_code", "co_consts", "co_names",
        "co_varnames", "co_cellvars", "co_freevars", "co_filename", "co_lnotab", "co_linetable",
        "co_exceptiontable", "co_positions", "cell_contents", "func_globals", "func_code",
        "func_closure", "func_defaults", "im_func", "im_self", "im_class", "_getframe", "_current_frames",
        "_current_exceptions",
    }
)  # fmt: skip

CODE_CONSTRUCTORS: frozenset[str] = frozenset(
    {"FunctionType", "LambdaType", "CodeType", "CellType", "MethodType", "new_class", "prepare_class"}
)
"""Flagged as attributes of anything: `typing.types.FunctionType` reaches them without naming `types`."""

MODULE_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "os", "sys", "io", "subprocess", "builtins", "__builtin__", "importlib", "imp", "ctypes",
        "socket", "shutil", "pickle", "marshal", "codecs", "posix", "nt", "runpy", "multiprocessing",
        "gc", "inspect", "pty", "signal", "tempfile", "_os", "_sys", "_io", "_imp", "_thread",
        "_posixsubprocess", "_socket", "_pickle", "_ctypes", "_winapi", "_signal", "_bootstrap",
        "_bootstrap_external", "_frozen_importlib", "_frozen_importlib_external", "_codecs", "_weakref",
    }
)  # fmt: skip
"""Attribute names that are (or in the stdlib usually hold) dangerous modules: `logging.os`,
`random._os`, `os.path.os`, `json.codecs`, `dataclasses.sys`."""

FILE_WRITE_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "write_text", "write_bytes", "touch", "mkdir", "makedirs", "unlink", "rmdir", "symlink_to",
        "hardlink_to", "link_to", "chmod", "lchmod", "chown", "lchown", "FileHandler",
        "RotatingFileHandler", "TimedRotatingFileHandler", "WatchedFileHandler", "rename", "copy_into",
        "move_into",
    }
)  # fmt: skip
SHIPPED_DATA_ATTRIBUTES: frozenset[str] = frozenset({"cwd", "home", "iterdir", "rglob", "glob"})
"""Path.cwd()/home() and directory listings: ways to find files that were shipped beside the agent."""

IMPORT_BY_NAME_ATTRIBUTES: frozenset[str] = frozenset(
    {"load_module", "exec_module", "import_module", "find_spec", "find_module", "module_from_spec",
     "spec_from_file_location", "spec_from_loader", "find_loader"}
)  # fmt: skip
"""Import-machinery methods: reaching any of them means a loader escaped; banned as frame internals."""

SENSITIVE_PATH_PREFIXES: tuple[str, ...] = (
    "/proc", "/sys", "/dev", "/etc", "/root", "/home", "/var", "/run", "/boot", "~",
)  # fmt: skip

HOST_PATH_STRINGS: tuple[str, ...] = (
    "/proc/",
    "/sys/",
    "/dev/",
    "/etc/",
    "/root/",
    "/home/",
    "/run/",
    "/var/run/",
)
"""A string constant that starts like this names a host path wherever it is used (f-string parts too)."""

WRITE_MODE_CHARS = frozenset("wax+")
