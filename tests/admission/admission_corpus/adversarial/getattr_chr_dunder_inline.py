# expect: security.dunder_attribute
# evasion: dunder name spelled with chr() inline
def agent_main(problem_data):
    return getattr((), chr(95) * 2 + "class" + chr(95) * 2)
