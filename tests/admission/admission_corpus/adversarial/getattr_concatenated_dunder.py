# expect: security.dunder_attribute
# evasion: dunder name split in two literals
def agent_main(problem_data):
    return getattr(problem_data, "__cl" + "ass__")
