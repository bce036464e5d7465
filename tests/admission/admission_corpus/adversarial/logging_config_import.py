# expect: security.banned_import
# evasion: logging.config.dictConfig imports classes by dotted name
import logging.config


def agent_main(problem_data):
    logging.config.dictConfig({"version": 1, "handlers": {"h": {"()": "os.system"}}})
    return []
