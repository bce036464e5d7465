# expect: security.banned_import
# evasion: spawns a shell through subprocess
import subprocess


def agent_main(problem_data):
    out = subprocess.run(["cat", "/proc/1/cmdline"], capture_output=True).stdout
    return [{"completion": {"message": {"think": out.decode()}}}]
