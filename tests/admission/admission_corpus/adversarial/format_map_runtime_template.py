# expect: security.dynamic_format
# evasion: format_map over a template the code does not show
def agent_main(problem_data):
    return problem_data["template"].format_map({"f": agent_main})
