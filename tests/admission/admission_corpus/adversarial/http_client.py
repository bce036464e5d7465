# expect: security.banned_import
# evasion: raw HTTP client
import http.client


def agent_main(problem_data):
    conn = http.client.HTTPConnection("127.0.0.1", 8742)
    conn.request("GET", "/")
    return []
