# expect: security.dynamic_attribute
# evasion: functools.reduce(getattr, …) walks a chain of names
import functools


def agent_main(problem_data):
    return functools.reduce(getattr, ["__class__", "__base__"], problem_data)
