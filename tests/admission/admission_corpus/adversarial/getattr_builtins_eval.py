# expect: security.dunder_name
# evasion: reads eval off __builtins__
def agent_main(problem_data):
    return getattr(__builtins__, "eval")("1")
