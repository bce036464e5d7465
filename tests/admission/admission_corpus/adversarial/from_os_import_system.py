# expect: security.banned_member
# evasion: imports os.system by name instead of using os.system
from os import system


def agent_main(problem_data):
    system("env > /tmp/leak")
    return []
