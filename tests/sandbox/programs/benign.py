"""A well-behaved program: one tool call over the proxy socket, its answer returned as the result."""

import http.client
import json
import os
import socket
import sys


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str):
        super().__init__("sandbox")
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


problem = json.loads(sys.stdin.read())
conn = UnixConnection(os.environ["SHOPARENA_PROXY_SOCKET"])
conn.request(
    "POST",
    "/v1/tools/find_product",
    body=json.dumps({"q": problem["query"]}),
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["SESSION"]},
)
answer = json.loads(conn.getresponse().read())
with open(os.environ["SHOPARENA_RESULT_PATH"], "w") as handle:
    json.dump({"answer": answer, "argv": sys.argv[1:]}, handle)
