# expect: security.relative_import
# evasion: a relative import has no package in the arena
from . import helpers


def agent_main(problem_data):
    return helpers.solve(problem_data)
