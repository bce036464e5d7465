# expect: security.banned_import
# evasion: inspect.stack() walks frames
import inspect


def agent_main(problem_data):
    return inspect.stack()[1].frame.f_globals
