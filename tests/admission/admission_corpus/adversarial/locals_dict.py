# expect: security.banned_call
# evasion: locals() as a handle on the frame
def agent_main(problem_data):
    return locals()
