# expect: security.type_creation
# evasion: type.__new__ as a class factory
def agent_main(problem_data):
    return type.__new__(type, "X", (), {})
