# expect: security.banned_call
# evasion: gets exec from eval of its name
def agent_main(problem_data):
    eval("exec")("import os")
    return []
