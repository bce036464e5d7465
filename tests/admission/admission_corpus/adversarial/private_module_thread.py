# expect: security.banned_import
# evasion: private C modules (_thread, _posixsubprocess, …)
import _posixsubprocess


def agent_main(problem_data):
    return _posixsubprocess
