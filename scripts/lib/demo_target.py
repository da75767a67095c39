"""The demos' stand-in for a team's HTTP endpoint: answers every request 200, whatever its
method (an HttpTarget without a method is a POST), and logs one line per call to stderr.

    python3 scripts/lib/demo_target.py PORT      (on 127.0.0.1; PORT 0 picks a free one)

Its first line on stderr says where it listens: ``listening on 127.0.0.1:PORT``. The standard
library only, so any python3 runs it.
"""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    # http.server's names for the handler of each method (any other is answered 501).
    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = answer  # noqa: N815


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print(f"listening on 127.0.0.1:{server.server_address[1]}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
