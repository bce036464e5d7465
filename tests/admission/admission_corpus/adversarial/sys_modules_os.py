# expect: security.banned_member
# evasion: fetches os from sys.modules without importing it
import sys


def agent_main(problem_data):
    sys.modules["os"].system("id")
    return []
