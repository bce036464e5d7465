# expect: security.banned_member
# evasion: io.open is open under another name
import io


def agent_main(problem_data):
    io.open("/tmp/x", "w").write("y")
    return []
