# expect: security.banned_call
# evasion: typing.get_type_hints evaluates string annotations
def target(x: "__import__('os').system('id')"):
    return x


def agent_main(problem_data):
    return target
