# expect: security.banned_member
# evasion: threading.settrace installs a tracer on new threads
import threading


def agent_main(problem_data):
    threading.settrace(lambda *a: None)
    return []
