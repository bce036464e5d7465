# expect: security.banned_member
# evasion: a star import of os brings system into globals unseen
from os import *  # noqa


def agent_main(problem_data):
    return system("id")  # noqa
