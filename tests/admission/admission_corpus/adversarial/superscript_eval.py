# expect: security.banned_call
# evasion: a modifier letter normalises to eval
def agent_main(problem_data):
    return ᵉval("2 + 2")
