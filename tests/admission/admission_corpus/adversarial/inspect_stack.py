# expect: security.frame_access
# evasion: inspect.stack() walks frames
import inspect


def agent_main(problem_data):
    return inspect.stack()[1].frame.f_globals
