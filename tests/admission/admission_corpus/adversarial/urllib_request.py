# expect: security.banned_member
# evasion: urllib.request fetches over the network
import urllib.request


def agent_main(problem_data):
    return urllib.request.urlopen("http://127.0.0.1:5432").read()
