# expect: security.dunder_attribute
# evasion: the re-initialised object is bound to a variable called `self`, which __init__ calls are allowed on
import sys


def agent_main(problem_data):
    self = sys.stdout.buffer.raw
    self.__init__(3, "wb")
    return []
