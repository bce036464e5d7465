# expect: security.banned_call
# evasion: builds code with ast and compile
import ast


def agent_main(problem_data):
    tree = ast.parse("import os")
    code = compile(tree, "<x>", "exec")
    return [code]
