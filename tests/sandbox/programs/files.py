"""Try to read host files whose paths the test handed over, write outside /tmp (into the host's run
directory above all), and import shoparena."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from attempts import attempt, params, report

args = params()


def read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read(4096)


def write(path: str) -> str:
    with open(path, "w") as handle:
        handle.write('{"forged": true}\n')
    return path


def append_forged_record(run_dir: str) -> str:
    with open(os.path.join(run_dir, "trajectories.jsonl"), "a") as handle:
        handle.write('{"problem_id": "p1", "outcome": {"success": true}}\n')
    return "appended"


def import_shoparena():
    import shoparena

    return shoparena.__file__


def import_shoparena_from_repo():
    sys.path.insert(0, args["repo"])
    return import_shoparena()


attempt("read secret", lambda: read(args["secret"]))
attempt("list secret dir", lambda: os.listdir(os.path.dirname(args["secret"])))
attempt("read problems", lambda: read(args["problems"]))
attempt("list run dir", lambda: os.listdir(args["run_dir"]))
attempt("append to run dir", lambda: append_forged_record(args["run_dir"]))
attempt("create run dir", lambda: os.makedirs(args["run_dir"], exist_ok=True) or "created")
attempt("read /etc/passwd", lambda: read("/etc/passwd"))
attempt("read /etc/shadow", lambda: read("/etc/shadow"))
attempt("list /root", lambda: os.listdir("/root"))
attempt("list /work", lambda: os.listdir("/work"))
attempt("list /home", lambda: os.listdir("/home"))
attempt("list /sys", lambda: os.listdir("/sys"))
attempt("read repo", lambda: os.listdir(args["repo"]))
for target in (
    "/escape.txt",
    "/app/escape.txt",
    "/usr/lib/escape.txt",
    "/etc/escape.txt",
    "/run/shoparena/x",
):
    attempt(f"write {target}", lambda t=target: write(t))
attempt("write interpreter prefix", lambda: write(os.path.join(sys.prefix, "escape.txt")))
attempt("write /dev/shm", lambda: write("/dev/shm/escape.txt"))
attempt("import shoparena", import_shoparena)
attempt("import shoparena from repo", import_shoparena_from_repo)
attempt("list site-packages", lambda: [p for p in sys.path if "site-packages" in p and os.listdir(p)])
tmp_ok = attempt("write /tmp", lambda: write("/tmp/allowed.txt"))
report(root=sorted(os.listdir("/")), tmp_ok=tmp_ok is not None)
