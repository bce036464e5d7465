"""The program a miner file runs under, in its own process: `python -I RUNNER MINER RESULT_FD LIMITS`.

Standard library only and no shoparena imports: the file agent copies it, with the SDK, into a
directory of its own inside the miner's private working directory, so nothing on the miner's command
line or path points back at the evaluator, and the miner's file (which is loaded by its path, under
the module name `miner_agent`) never shares a directory with them: whatever the miner's file is
called, `import miner_sdk` finds the harness's SDK.

It limits its own process before any miner code is loaded (address space, CPU seconds, no core
files, file size, open files) — done here rather than in a `preexec_fn`, which is unsafe in a parent
that runs threads (the tool server does), and equivalent because the miner's code is not loaded yet
and an unprivileged process cannot raise a hard limit again. It reads `problem_data` as JSON from
stdin, calls `agent_main(problem_data)`, and writes one JSON envelope to RESULT_FD — never to
stdout, so whatever the miner prints cannot corrupt its result:
`{"ok": true, "steps": ...}` or `{"ok": false, "error": "...", "traceback": "..."}`.
"""

import importlib.util
import json
import os
import resource
import sys
import traceback

MAX_TRACEBACK_CHARS = 6000


def _limit(limits: dict) -> None:
    def cap(kind: int, soft: int, hard: int) -> None:
        _, current_hard = resource.getrlimit(kind)
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        resource.setrlimit(kind, (soft, hard))

    cap(resource.RLIMIT_CORE, 0, 0)
    if limits.get("memory_bytes"):
        cap(resource.RLIMIT_AS, limits["memory_bytes"], limits["memory_bytes"])
    if limits.get("cpu_s"):
        cap(resource.RLIMIT_CPU, limits["cpu_s"], limits["cpu_s"] + 1)
    if limits.get("file_bytes"):
        cap(resource.RLIMIT_FSIZE, limits["file_bytes"], limits["file_bytes"])
    if limits.get("open_files"):
        cap(resource.RLIMIT_NOFILE, limits["open_files"], limits["open_files"])


def _write(fd: int, envelope: dict) -> None:
    try:
        data = json.dumps(envelope).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        data = json.dumps(
            {"ok": False, "error": f"agent_main returned a value that cannot be encoded as JSON: {exc}"}
        ).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main() -> None:
    miner_file, result_fd, limits = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    os.set_inheritable(result_fd, False)  # processes the miner starts do not get the result channel
    _limit(limits)
    problem_data = json.loads(sys.stdin.buffer.read())
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # `import miner_sdk`: the harness's
    sys.argv = [os.path.join(os.getcwd(), miner_file)]
    try:
        spec = importlib.util.spec_from_file_location("miner_agent", sys.argv[0])
        module = importlib.util.module_from_spec(spec)
        sys.modules["miner_agent"] = module
        spec.loader.exec_module(module)
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
    _write(result_fd, envelope)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)  # threads or atexit hooks the miner left behind must not keep it running


if __name__ == "__main__":
    main()
