#!/usr/bin/env python3
"""local_proxy.py UPSTREAM MODE - a lying server for tests/client/local_mode.sh.

Listens on a free 127.0.0.1 port (printed as "listening on 127.0.0.1:PORT")
and passes every request to UPSTREAM (http://127.0.0.1:PORT of the real
server), bytes as they come, except what MODE changes:
  fingerprint  the world info's generator fingerprint is another
  selfcheck    the world info's golden-tile digest is another
  noselfcheck  the world info has no "selfcheck"
  hashes       GET .../hashes lists chunk (0, 0) with version 99
Standard library only.
"""
import http.server
import json
import sys
import urllib.request

UPSTREAM, MODE = sys.argv[1], sys.argv[2]


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        req = urllib.request.Request(UPSTREAM + self.path, headers=headers)
        try:
            with urllib.request.urlopen(req) as r:
                status, head, body = r.status, r.getheaders(), r.read()
        except urllib.error.HTTPError as e:
            status, head, body = e.code, e.headers.items(), e.read()
        path = self.path.split("?")[0]
        if status == 200 and path.count("/") == 3 and path.startswith("/v1/worlds/"):
            info = json.loads(body)
            if MODE == "fingerprint":
                info["fingerprint"] = "%016x" % (int(info["fingerprint"], 16) ^ 1)
            elif MODE == "selfcheck":
                info["selfcheck"] = "%016x" % (int(info["selfcheck"], 16) ^ 1)
            elif MODE == "noselfcheck":
                del info["selfcheck"]
            body = json.dumps(info).encode()
        elif status == 200 and path.endswith("/hashes") and MODE == "hashes":
            h = json.loads(body)
            h["seq"] = max(h["seq"], 99)
            h["chunks"] = [c for c in h["chunks"] if (c["cx"], c["cz"]) != (0, 0)]
            h["chunks"].append({"cx": 0, "cz": 0, "version": 99, "hash": "00000000000000ff"})
            body = json.dumps(h).encode()
        self.send_response(status)
        for k, v in head:
            if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
print("listening on 127.0.0.1:%d" % server.server_address[1], flush=True)
server.serve_forever()
