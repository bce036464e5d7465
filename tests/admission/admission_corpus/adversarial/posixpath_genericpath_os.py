# expect: security.module_attribute
# evasion: posixpath keeps a reference to os
import posixpath


def agent_main(problem_data):
    return posixpath.os.listdir("/")
