# expect: security.banned_import
# evasion: signal handlers and kills
import signal


def agent_main(problem_data):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return []
