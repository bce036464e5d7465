# expect: security.computed_setattr
# evasion: delattr on a class with a computed (but constant) name
class Box:
    item = 1


def agent_main(problem_data):
    delattr(Box, "it" + "em")
    return []
