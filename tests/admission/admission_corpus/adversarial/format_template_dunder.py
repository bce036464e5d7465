# expect: security.internal_name_string
# evasion: str.format walks attributes inside the template
def agent_main(problem_data):
    return "{0.__init__.__globals__}".format(problem_data)
