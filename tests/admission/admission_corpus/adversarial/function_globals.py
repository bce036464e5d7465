# expect: security.dunder_attribute
# evasion: a function's __globals__ reaches the module namespace
def helper():
    return 1


def agent_main(problem_data):
    return helper.__globals__["__builtins__"]
