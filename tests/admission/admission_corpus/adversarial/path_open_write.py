# expect: security.open_write
# evasion: Path.open in write mode
from pathlib import Path


def agent_main(problem_data):
    with Path("/tmp/x").open("wb") as handle:
        handle.write(b"")
    return []
