"""A receiver of Cutout's job webhooks: Python's standard library only.

    CUTOUT_WEBHOOK_SECRET=whsec_… PORT=8000 python3 examples/webhooks/receiver.py

It checks the Standard Webhooks signature by hand (the `standardwebhooks` package on PyPI
does the same). It answers 204 to a delivery one of whose signatures is right and whose
webhook-timestamp is at most 5 minutes from this machine's clock, 401 to any other, and acts
once per webhook-id (a retry of a delivery it has handled is answered 200 and not acted on
again). During a rotation of the secret, Cutout signs with the old and the new one: this
receiver accepts the delivery with whichever it has. Cutout retries anything but a 2xx, so
answer fast and do the slow work afterwards.
"""
import base64
import binascii
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


def secret_key(secret):
    """The secret's bytes: the base64 after `whsec_`."""
    return base64.b64decode(secret.removeprefix("whsec_"), validate=True)


def verify(key, headers, body):
    """True when one of the `v1,<base64>` signatures is HMAC-SHA256 of `<id>.<timestamp>.<body>`, and the timestamp is recent."""
    webhook_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp", "")
    signatures = headers.get("webhook-signature", "")
    if not webhook_id or not (timestamp.isascii() and timestamp.isdigit()) or abs(time.time() - int(timestamp)) > TOLERANCE_SECONDS:
        return False
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest())
    for signature in signatures.split(" "):
        version, _, value = signature.partition(",")
        if version == "v1" and hmac.compare_digest(expected, value.encode("latin-1", "replace")):
            return True
    return False


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.send_response(413)
            self.end_headers()
            return
        # The raw bytes, exactly as sent: parsing and re-serialising the JSON would change them.
        body = self.rfile.read(length)
        if not verify(KEY, self.headers, body):
            print("refused a request: no valid signature, or an old timestamp", flush=True)
            self.send_response(401)
            self.end_headers()
            return
        delivery = self.headers.get("webhook-id")
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
    try:
        KEY = secret_key(SECRET)
    except (binascii.Error, ValueError):
        sys.exit("CUTOUT_WEBHOOK_SECRET is not a signing secret: whsec_ followed by base64.")
    server = ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8000"))), Receiver)
    host, port = server.server_address[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    server.serve_forever()
