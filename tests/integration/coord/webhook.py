#!/usr/bin/env python3
"""A webhook receiver for the notification tests: HTTP on 127.0.0.1 (an ephemeral port, printed
as "listening on PORT"), one thread per request, that appends one JSON line per POST to --out:
{"t": arrival (unix s), "answered": when answered, "path", "content_type", "status": what it
answered, "body": the body parsed as JSON (or "raw": the text when it is not JSON)}.

It answers 200 "ok" (what Slack and Teams answer), except --fail requests after the first
--after ones: 500. With --hold FILE the first of those is not answered before FILE exists (at
most 30 s): a target that hangs while the test watches what the coordinator does meanwhile."""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--after", type=int, default=0, help="answer the first N requests at once")
    ap.add_argument("--fail", type=int, default=0, help="then answer 500 to N requests")
    ap.add_argument("--hold", default="", help="the first of those waits for this file")
    a = ap.parse_args()
    lock = threading.Lock()
    seen = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            t = time.time()
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                n = seen[0]
                seen[0] += 1
            if n == a.after and a.hold:
                end = time.time() + 30
                while not os.path.exists(a.hold) and time.time() < end:
                    time.sleep(0.05)
            status = 500 if a.after <= n < a.after + a.fail else 200
            rec = {"t": t, "path": self.path, "content_type": self.headers.get("Content-Type"),
                   "status": status}
            try:
                rec["body"] = json.loads(body)
            except ValueError:
                rec["raw"] = body.decode("utf-8", "replace")
            # Answer and record under the lock: a client that sends its next request as soon as
            # it has this answer must not see that one recorded first (records in arrival order).
            with lock:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                    self.wfile.flush()
                except OSError:  # the client gave up waiting (its attempt timed out)
                    rec["status"] = 0
                rec["answered"] = time.time()
                with open(a.out, "a") as f:
                    f.write(json.dumps(rec) + "\n")

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(f"listening on {srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
