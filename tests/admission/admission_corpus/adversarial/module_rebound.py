# expect: security.module_as_value
# evasion: rebinds sys to another name
import sys

s = sys


def agent_main(problem_data):
    return s.modules
