# expect: security.dynamic_format
# evasion: a format template whose field name arrives at run time reads attributes by string
def agent_main(problem_data):
    template = "{0." + problem_data["query"] + "}"
    return template.format(agent_main)
