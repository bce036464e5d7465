# expect: security.module_attribute
# evasion: logging holds sys; sys.modules holds every module
import logging


def agent_main(problem_data):
    return logging.sys.modules["os"].system("id")
