# expect: format.syntax
# evasion: does not parse
def agent_main(problem_data)
    return []
