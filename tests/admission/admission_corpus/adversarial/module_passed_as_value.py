# expect: security.module_as_value
# evasion: passes os to a helper so o.system is not os.system
import os


def run(module, command):
    return module.system(command)


def agent_main(problem_data):
    run(os, "id")
    return []
