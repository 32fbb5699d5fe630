#!/usr/bin/env python3
"""A minimal server of part of meteorbench's contract (docs/contract.md),
written apart from meteorbench for its tests: REST JSON only, from the data
file, with the standard library alone.

Serves: GET /api/MeteoriteLandings ("API Version 1.0"), GET and POST
/api/MeteoriteLandings/LargePayload (the records; "SUCCESS"). Lacks, on
purpose: the NDJSON stream route, protobuf, gRPC, ?records=N (it always
answers the file's records), /metrics and /healthz.

Usage: contract_server.py DATA_FILE  (prints "listening HOST:PORT", then serves)
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NUMBERS = ("mass", "reclat", "reclong")


def convert(record):
    """The file's record (numbers as strings) as the contract answers it:
    numbers as numbers, missing values omitted."""
    out = {}
    for key, value in record.items():
        if key.startswith(":") or value is None:
            continue
        if key == "id":
            value = int(value)
        elif key in NUMBERS:
            value = float(value)
        out[key] = value
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the contract's clients expect
    records = b"[]"

    def answer(self, status, body, ctype="application/json"):
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/api/MeteoriteLandings":
            self.answer(200, "API Version 1.0")
        elif path == "/api/MeteoriteLandings/LargePayload":
            self.answer(200, Handler.records)
        else:
            self.answer(404, {"error": "no such path: " + path})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path.split("?", 1)[0] != "/api/MeteoriteLandings/LargePayload":
            self.answer(404, {"error": "no such path"})
            return
        if self.refuse_post():
            return
        try:
            self.check_post(json.loads(body))
        except ValueError as e:
            self.answer(400, {"error": str(e)[:100]})
            return
        self.answer(200, "SUCCESS")

    def refuse_post(self):
        """Answers a post this server refuses before reading its JSON (and
        says so); this one refuses none."""
        return False

    def check_post(self, value):
        """Raises ValueError for a posted JSON value this server rejects;
        this one takes any."""

    def log_message(self, *args):
        pass  # nothing per request


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        Handler.records = json.dumps([convert(r) for r in json.load(f)]).encode()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print("listening %s:%d" % srv.server_address[:2], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
