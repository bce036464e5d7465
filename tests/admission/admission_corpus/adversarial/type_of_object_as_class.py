# expect: security.type_creation
# evasion: type(x) is the class of x without naming it: here a FileIO on the result descriptor
import sys


def agent_main(problem_data):
    forged = type(sys.stdout.buffer.raw)(3, "wb")
    forged.write(b'{"ok": true, "steps": []}')
    return []
