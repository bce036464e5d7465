"""The program a miner file runs under, inside the sandbox: `python -I RUNNER SDK MINER`.

Standard library only and no shoparena imports: the sandbox shows this interpreter's standard library
and nothing else. The file agent places this runner, the SDK and the miner's file side by side in the
sandbox's read-only /app, which is not on the path (`-I`), so no miner file name can shadow a module:
the SDK is loaded by its path and registered as `miner_sdk`, and the miner's file is loaded by its
path under the module name `miner_agent`.

The limits (address space, CPU, file size, open files, the tree's memory and processes, the wall
clock) are the sandbox's, applied before this runner starts. It reads `problem_data` as JSON from
stdin, calls `agent_main(problem_data)`, and writes one JSON envelope to the result channel named by
$SHOPARENA_RESULT_PATH — never to stdout, so whatever the miner prints cannot corrupt its result:
`{"ok": true, "steps": ...}` or `{"ok": false, "error": "...", "traceback": "..."}`. The channel's path
is read before any miner code runs, so a miner that edits its environment cannot redirect it; a
miner that writes to the channel itself only makes its own result unreadable.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import traceback

RESULT_ENV = "SHOPARENA_RESULT_PATH"
MAX_TRACEBACK_CHARS = 6000
SUBNET_MODULES = {
    "src.agent.agent_interface": "_shoparena_subnet_agent_interface.py",
    "src.agent.proxy_client": "_shoparena_subnet_proxy_client.py",
}
"""SN15's miner-facing modules (`subnet_compat`), beside this runner in /app when the file agent ships
them: a subnet miner's `from src.agent.proxy_client import ProxyClient` loads these (issue 23)."""
SUBNET_PACKAGES = ("src", "src.agent")


class _Package(importlib.abc.Loader):
    """An empty package (`src`, `src.agent`) that holds only the compatibility modules."""

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        pass


class _SubnetFinder(importlib.abc.MetaPathFinder):
    """Maps the subnet's module names onto the shipped files; every other import is left alone."""

    def __init__(self, here: str):
        self.here = here

    def find_spec(self, name, path=None, target=None):
        if name in SUBNET_PACKAGES:
            return importlib.machinery.ModuleSpec(name, _Package(), is_package=True)
        file = SUBNET_MODULES.get(name)
        if file is None:
            return None
        return importlib.util.spec_from_file_location(name, os.path.join(self.here, file))


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _encode(envelope: dict) -> bytes:
    try:
        return json.dumps(envelope).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        return json.dumps(
            {"ok": False, "error": f"agent_main returned a value that cannot be encoded as JSON: {exc}"}
        ).encode()


def _write(path: str, data: bytes) -> None:
    """Write the envelope; past its cap the sandbox closes the channel (EPIPE) and keeps nothing."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        print(f"shoparena runner: cannot open the result channel: {exc}", file=sys.stderr)
        return
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        print(f"shoparena runner: the result channel refused the result: {exc}", file=sys.stderr)
    finally:
        os.close(fd)


def main() -> None:
    sdk_file, miner_file = sys.argv[1], sys.argv[2]
    result_path = os.environ.get(RESULT_ENV)
    if not result_path:
        sys.exit(f"shoparena runner: {RESULT_ENV} is not set; run miner files through the file agent")
    problem_data = json.loads(sys.stdin.buffer.read())
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    here = os.path.dirname(os.path.abspath(__file__))
    sys.argv = [os.path.join(here, miner_file)]
    try:
        _load("miner_sdk", os.path.join(here, sdk_file))  # `import miner_sdk`: the harness's, by path
        if all(os.path.exists(os.path.join(here, f)) for f in SUBNET_MODULES.values()):
            sys.meta_path.insert(0, _SubnetFinder(here))
        module = _load("miner_agent", sys.argv[0])
        agent_main = getattr(module, "agent_main", None)
        if not callable(agent_main):
            envelope = {"ok": False, "error": f"{miner_file} defines no callable agent_main(problem_data)"}
        else:
            envelope = {"ok": True, "steps": agent_main(problem_data)}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: all are the miner's failure
        envelope = {
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc()[-MAX_TRACEBACK_CHARS:],
        }
    _write(result_path, _encode(envelope))
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)  # threads or atexit hooks the miner left behind must not keep it running


if __name__ == "__main__":
    main()
