# expect: security.dynamic_attribute
# evasion: attrgetter with a name computed at run time
from operator import attrgetter


def agent_main(problem_data):
    return attrgetter(problem_data["query"])(problem_data)
