# expect: security.banned_call
# evasion: fullwidth letters NFKC-normalise to exec
def agent_main(problem_data):
    ｅｘｅｃ("import os; os.system('id')")
    return []
