# expect: security.open_write
# evasion: open bound in a partial: its mode is not visible at the call
import functools

writer = functools.partial(open, mode="w")


def agent_main(problem_data):
    writer("/tmp/x").write("y")
    return []
