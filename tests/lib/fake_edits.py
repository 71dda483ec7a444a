#!/usr/bin/env python3
"""fake_edits.py SCRIPT LOG - a scripted edit endpoint for the clients' retry
tests (tests/client/client_retry.sh, tests/client/js/edits.test.mjs).

Listens on a free 127.0.0.1 port (printed as "listening on 127.0.0.1:PORT")
and answers each POST .../edits with the next action of SCRIPT, a comma
list (the last action repeats once the list is spent):
  200      applied: {"first_seq":7,"last_seq":7,"world_hash":...,"chunks":[[0,0]]}
  200r     the same as a replay ("replay":true, Idempotent-Replayed: true)
  503      not applied, Retry-After: 0      (503/1: Retry-After: 1)
  504      {"error":"outcome_unknown"}, Retry-After: 0
  502 409 429 422 400 401   that status with a JSON error (Retry-After: 0
           on 409 and 429)
  drop     read the request, close the connection without an answer
  hang     read the request, answer nothing for 60 s
For every POST it appends one line to LOG: the seconds since start (6
decimals), the Idempotency-Key header as sent (or "-") and the body.
Other methods get 405. Standard library only.
"""
import http.server
import json
import sys
import threading
import time

SCRIPT, LOG = sys.argv[1].split(","), sys.argv[2]
T0 = time.monotonic()
lock = threading.Lock()
count = 0
ANSWER = {"first_seq": 7, "last_seq": 7, "world_hash": "00000000000000ab", "chunks": [[0, 0]]}
ERRORS = {
    502: "bad_gateway", 503: "unavailable", 504: "outcome_unknown", 409: "conflict",
    429: "rate_limited", 422: "unprocessable", 400: "bad_request", 401: "unauthorized",
}


class Fake(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        global count
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            action = SCRIPT[min(count, len(SCRIPT) - 1)]
            count += 1
            with open(LOG, "a") as f:
                f.write("%.6f %s %s\n" % (time.monotonic() - T0,
                                          self.headers.get("Idempotency-Key", "-"),
                                          body.decode(errors="replace")))
        if action == "drop":
            self.close_connection = True
            return
        if action == "hang":
            time.sleep(60)
            self.close_connection = True
            return
        if action in ("200", "200r"):
            replay = action == "200r"
            self.send(200, dict(ANSWER, replay=True) if replay else ANSWER,
                      [("Idempotent-Replayed", "true")] if replay else [])
            return
        status, _, after = action.partition("/")
        status = int(status)
        headers = [("Retry-After", after or "0")] if status in (503, 504, 409, 429) else []
        self.send(status, {"error": ERRORS.get(status, "error"),
                           "detail": "scripted answer %s" % action}, headers)

    def do_GET(self):
        self.send(405, {"error": "method_not_allowed", "detail": "POST only"})


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
server.daemon_threads = True
print("listening on 127.0.0.1:%d" % server.server_address[1], flush=True)
server.serve_forever()
