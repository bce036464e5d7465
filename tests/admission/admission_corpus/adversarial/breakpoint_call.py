# expect: security.banned_call
# evasion: breakpoint() starts pdb, which runs arbitrary code
def agent_main(problem_data):
    breakpoint()
    return []
