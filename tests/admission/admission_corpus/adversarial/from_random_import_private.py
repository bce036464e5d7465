# expect: security.private_attribute
# evasion: imports a private name of a module
from random import _os as helper


def agent_main(problem_data):
    return helper.listdir("/")
