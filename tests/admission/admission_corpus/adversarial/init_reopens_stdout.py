# expect: security.dunder_attribute
# evasion: __init__ on stdout's raw file re-opens it on the result descriptor, to forge the result envelope
import sys


def agent_main(problem_data):
    sys.stdout.buffer.raw.__init__(3, "wb")
    print('{"ok": true, "steps": []}')
    return []
