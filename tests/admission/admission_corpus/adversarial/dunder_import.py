# expect: security.banned_call
# evasion: __import__ instead of an import statement
def agent_main(problem_data):
    return __import__("os").system("id")
