#!/usr/bin/env python3
"""A local OTLP/HTTP sink for the gateway bench (TELEMETRY=1): accepts POST /v1/traces, reads
the whole protobuf body and answers 200 with an empty ExportTraceServiceResponse (an empty
protobuf message is zero bytes), counting exports and bytes. It does not decode the spans: the
bench measures what exporting costs the gateway, and the spans' content is checked by the
tests (crates/cli/tests/it/telemetry/). Prints its URL on stderr, its totals on SIGTERM."""

import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

totals = {"exports": 0, "bytes": 0}
lock = threading.Lock()


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        with lock:
            totals["exports"] += 1
            totals["bytes"] += len(body)
        self.send_response(200 if self.path == "/v1/traces" else 404)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)

    def stop(*_):
        print(f"exports {totals['exports']} bytes {totals['bytes']}", file=sys.stderr, flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    print(f"otlp sink on http://127.0.0.1:{server.server_address[1]}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
