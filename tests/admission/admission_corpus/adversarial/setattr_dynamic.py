# expect: security.dynamic_attribute
# evasion: setattr with a computed name
class Box:
    pass


def agent_main(problem_data):
    box = Box()
    setattr(box, problem_data["query"], 1)
    return []
