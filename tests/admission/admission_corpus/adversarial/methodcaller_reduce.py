# expect: security.dunder_attribute
# evasion: methodcaller reaches __reduce_ex__
from operator import methodcaller


def agent_main(problem_data):
    return methodcaller("__reduce_ex__", 2)(problem_data)
