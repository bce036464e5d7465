# expect: security.module_attribute
# evasion: random imports os as random._os
import random


def agent_main(problem_data):
    random._os.system("id")
    return []
