# expect: security.code_construction
# evasion: builds a function from a code object
import types


def agent_main(problem_data):
    return types.FunctionType
