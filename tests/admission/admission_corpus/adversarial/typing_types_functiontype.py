# expect: security.code_construction
# evasion: reaches types.FunctionType through typing
import typing


def agent_main(problem_data):
    return typing.types.FunctionType
