# expect: security.dunder_name
# evasion: __builtins__ is a dict inside imported modules
def agent_main(problem_data):
    return __builtins__["exec"]
