# expect: security.evaluated_annotation
# evasion: a ForwardRef evaluates the string it holds
from typing import ForwardRef


def agent_main(problem_data):
    return ForwardRef(problem_data["query"])
