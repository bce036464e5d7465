# expect: security.banned_call
# evasion: aliases eval to an innocent name
run = eval


def agent_main(problem_data):
    return run("1 + 1")
