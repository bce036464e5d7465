# expect: security.banned_member
# evasion: os.fdopen writes to an inherited descriptor
import os


def agent_main(problem_data):
    os.fdopen(3, "w").write('{"ok": true, "steps": []}')
    return []
