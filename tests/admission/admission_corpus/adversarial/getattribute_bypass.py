# expect: security.dunder_attribute
# evasion: object.__getattribute__ as a getattr
def agent_main(problem_data):
    return object.__getattribute__(problem_data, "keys")
