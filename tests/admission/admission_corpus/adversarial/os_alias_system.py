# expect: security.banned_member
# evasion: aliases os so the call reads o.system
import os as o


def agent_main(problem_data):
    o.system("id")
    return []
