# expect: security.dynamic_attribute
# evasion: names come from a parameter
def pick(obj, names):
    return [getattr(obj, name) for name in names]


def agent_main(problem_data):
    return pick(problem_data, problem_data["query"].split())
