# expect: security.computed_setattr
# evasion: setattr on a module with a name that folds to an ordinary attribute (monkeypatching json)
import json

NAME = "dum" + "ps"


def agent_main(problem_data):
    setattr(json, NAME, print)
    return []
