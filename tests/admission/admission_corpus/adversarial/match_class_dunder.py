# expect: security.dunder_attribute
# evasion: a class pattern reads attributes by keyword
def agent_main(problem_data):
    match problem_data:
        case dict(__class__=cls):
            return cls
    return []
