# expect: format.agent_main
# evasion: no entry point
def solve(problem_data):
    return []
