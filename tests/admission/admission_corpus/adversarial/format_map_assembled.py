# expect: security.internal_name_string
# evasion: the template is assembled so no literal shows the walk
def agent_main(problem_data):
    template = "{x." + "__class__" [:2] + "class__}"
    return template.format_map({"x": problem_data})
