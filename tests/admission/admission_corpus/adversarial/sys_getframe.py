# expect: security.frame_internals
# evasion: sys._getframe reaches the caller
import sys


def agent_main(problem_data):
    return sys._getframe(1).f_locals
