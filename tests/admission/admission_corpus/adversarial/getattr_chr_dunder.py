# expect: security.dynamic_attribute
# evasion: dunder name spelled with chr() in a local variable
def agent_main(problem_data):
    under = chr(95) * 2
    return getattr((), under + "class" + under)
