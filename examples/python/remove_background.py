"""Removes the background of one photo with requests, cropped to the subject, as WebP.

    CUTOUT_URL=http://127.0.0.1:8080 CUTOUT_TOKEN_ID=cut_user_… python3 remove_background.py photo.jpg photo.webp
"""
import os
import sys

import requests


def remove_background(input_path: str, output_path: str) -> None:
    url = os.environ.get("CUTOUT_URL", "http://127.0.0.1:8080")

    # 1. Exchange the Token ID for a managed token (it lives an hour by default).
    exchange = requests.post(f"{url}/api/v1/auth/token", headers={"token": os.environ["CUTOUT_TOKEN_ID"]}, timeout=30)
    if exchange.status_code != 200:
        sys.exit(f"failed: {exchange.status_code} {exchange.text}")
    managed = exchange.json()["managed_token"]

    # 2. Upload the photo with the options as form fields; Accept asks for raw bytes, not Base64.
    with open(input_path, "rb") as photo:
        answer = requests.post(
            f"{url}/api/v1/background/remove/multipart",
            headers={"Authorization": managed, "Accept": "image/webp"},
            files={"file": photo},
            data={"format": "webp", "crop": "true"},
            timeout=120,
        )
    if answer.status_code != 200:
        problem = answer.json()
        sys.exit(f"failed: {answer.status_code} {problem['code']}: {problem['detail']} (request {problem['request_id']})")

    with open(output_path, "wb") as result:
        result.write(answer.content)
    print(f"wrote {output_path} ({answer.headers['X-Width']}x{answer.headers['X-Height']})")


if __name__ == "__main__":
    remove_background(sys.argv[1], sys.argv[2])
