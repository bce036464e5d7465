# expect: security.file_write
# evasion: a logging handler that writes files
import logging


def agent_main(problem_data):
    logging.getLogger().addHandler(logging.FileHandler("/tmp/log"))
    return []
