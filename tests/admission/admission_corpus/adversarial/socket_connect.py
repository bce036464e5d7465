# expect: security.banned_import
# evasion: opens a socket to the database
import socket


def agent_main(problem_data):
    socket.create_connection(("127.0.0.1", 5432))
    return []
