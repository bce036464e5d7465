# expect: security.dunder_name
# evasion: the implicit __class__ cell inside a method
class Agent:
    def kind(self):
        return __class__


def agent_main(problem_data):
    return Agent().kind()
