# expect: security.banned_import
# evasion: loads ctypes through importlib
import importlib


def agent_main(problem_data):
    ctypes = importlib.import_module("ctypes")
    return ctypes.CDLL(None)
