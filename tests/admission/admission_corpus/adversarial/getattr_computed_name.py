# expect: security.dynamic_attribute
# evasion: attribute name only known at run time
import json


def agent_main(problem_data):
    name = "".join(reversed(problem_data["query"][:3]))
    return getattr(json, name)
