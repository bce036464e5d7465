# expect: security.banned_member
# evasion: imports urllib.request through from-import
from urllib import request


def agent_main(problem_data):
    return request.urlopen("http://10.0.0.1/").read()
