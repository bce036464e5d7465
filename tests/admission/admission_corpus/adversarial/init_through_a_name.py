# expect: security.dunder_attribute
# evasion: the same re-initialisation, through a local name so the receiver looks like a plain variable
import sys


def agent_main(problem_data):
    raw = sys.stderr.buffer.raw
    raw.__init__(3, "wb")
    return []
