# expect: security.banned_call
# evasion: vars() exposes a module's namespace
import json


def agent_main(problem_data):
    return vars(json)["codecs"]
