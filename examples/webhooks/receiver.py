"""A receiver of Cutout's job webhooks: Python's standard library only.

    CUTOUT_WEBHOOK_SECRET=whsec_… PORT=8000 python3 examples/webhooks/receiver.py

It answers 204 to a delivery whose Cutout-Signature is right and at most 5 minutes old, 401
to any other, and acts once per Cutout-Webhook-Id (a retry of a delivery it has handled is
answered 200 and not acted on again). Cutout retries anything but a 2xx, so answer fast and
do the slow work afterwards.
"""
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ.get("CUTOUT_WEBHOOK_SECRET", "")
TOLERANCE_SECONDS = 5 * 60
MAX_BODY_BYTES = 1024 * 1024

# Deliveries handled; a real receiver keeps these in its database.
handled = set()


def verify(header, body):
    """True when the header signs `<t>.<body>` with the secret, and `t` is recent."""
    fields = dict(part.strip().split("=", 1) for part in (header or "").split(",") if "=" in part)
    try:
        timestamp = int(fields.get("t", ""))
    except ValueError:
        return False
    if abs(time.time() - timestamp) > TOLERANCE_SECONDS:
        return False
    expected = hmac.new(SECRET.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), fields.get("v1", "").encode("latin-1", "replace"))


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.send_response(413)
            self.end_headers()
            return
        # The raw bytes, exactly as sent: parsing and re-serialising the JSON would change them.
        body = self.rfile.read(length)
        if not verify(self.headers.get("Cutout-Signature"), body):
            print("refused a request: bad or old signature", flush=True)
            self.send_response(401)
            self.end_headers()
            return
        delivery = self.headers.get("Cutout-Webhook-Id")
        if delivery in handled:
            self.send_response(200)
            self.end_headers()
            return
        handled.add(delivery)
        job = json.loads(body)
        counts = job["counts"]
        print(f"{job['event']} {job['id']}: {counts['succeeded']} succeeded, {counts['failed']} failed; results at {job['results_url']}", flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, format, *args):
        pass


if __name__ == "__main__":
    if not SECRET:
        sys.exit("Set CUTOUT_WEBHOOK_SECRET to the signing secret the dashboard or `cutout webhook-secret` showed.")
    server = ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8000"))), Receiver)
    host, port = server.server_address[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    server.serve_forever()
