# expect: security.banned_import
# evasion: marshal builds code objects
import marshal


def agent_main(problem_data):
    return marshal.loads(b"")
