# expect: security.runtime_dunder
# evasion: a class defines the hooks Python calls behind the code's back (issubclass, subclassing, C[x], descriptors)
class Probe:
    @classmethod
    def __subclasshook__(cls, other):
        return True

    def __init_subclass__(cls, **kwargs):
        pass

    def __class_getitem__(cls, item):
        return item

    def __set_name__(self, owner, name):
        pass


def agent_main(problem_data):
    return issubclass(int, Probe)
