# expect: security.evaluated_annotation
# evasion: get_type_hints evaluates strings
import typing


def agent_main(problem_data):
    def f(x: "int"):
        return x

    return typing.get_type_hints(f)
