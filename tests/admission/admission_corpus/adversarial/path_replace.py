# expect: security.file_write
# evasion: Path.replace renames a file over another (str.replace is a different method)
from pathlib import Path


def agent_main(problem_data):
    target = Path("/tmp") / "a.txt"
    target.replace("/tmp/b.txt")
    return []
