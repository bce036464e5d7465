# expect: security.host_path
# evasion: reads the parent's environment
def agent_main(problem_data):
    return open("/proc/1/environ", "rb").read()
