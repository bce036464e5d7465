# expect: security.dunder_attribute
# evasion: rewrites a function's code object
def f():
    return 1


def agent_main(problem_data):
    return f.__code__.replace(co_consts=(None, 2))
