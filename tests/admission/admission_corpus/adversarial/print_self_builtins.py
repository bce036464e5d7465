# expect: security.dunder_attribute
# evasion: print.__self__ is the builtins module
def agent_main(problem_data):
    return print.__self__.open("/etc/passwd").read()
