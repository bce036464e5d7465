# expect: security.banned_call
# evasion: a decorator calls exec on the class
@exec
@lambda cls: "import os; os.system('id')"
class Payload:
    pass


def agent_main(problem_data):
    return []
