# expect: security.module_attribute
# evasion: reaches os through os.path.os, with only os.path imported
import os.path


def agent_main(problem_data):
    return os.path.os.popen("ls /").read()
