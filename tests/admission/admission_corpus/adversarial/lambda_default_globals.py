# expect: security.banned_call
# evasion: a default argument smuggles globals()
grab = lambda g=globals: g()["__builtins__"]  # noqa: E731


def agent_main(problem_data):
    return grab()
