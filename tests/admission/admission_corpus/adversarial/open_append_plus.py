# expect: security.open_write
# evasion: mode r+ also writes
def agent_main(problem_data):
    handle = open("/tmp/state", "r+")
    handle.write("x")
    return []
