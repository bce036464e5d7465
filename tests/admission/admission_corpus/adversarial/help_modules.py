# expect: security.banned_call
# evasion: help('modules') imports every module on the path
def agent_main(problem_data):
    help("modules")
    return []
