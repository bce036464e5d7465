# expect: security.dunder_attribute
# evasion: probes for __dict__
def agent_main(problem_data):
    return hasattr(problem_data, "__dict__")
