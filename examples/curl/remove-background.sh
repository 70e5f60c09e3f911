#!/bin/sh
# Removes the background of one photo with curl, cropped to the subject, as WebP.
#   CUTOUT_URL=http://127.0.0.1:8080 CUTOUT_TOKEN_ID=cut_user_… ./remove-background.sh photo.jpg photo.webp
set -eu
url=${CUTOUT_URL:-http://127.0.0.1:8080}
input=$1
output=$2

# 1. Exchange the Token ID for a managed token (it lives an hour by default).
grant=$(curl -sS --fail-with-body -X POST "$url/api/v1/auth/token" -H "token: $CUTOUT_TOKEN_ID") || { echo "failed: $grant" >&2; exit 1; }
managed=$(printf '%s' "$grant" | jq -r .managed_token)

# 2. Upload the photo with the options as form fields; Accept asks for raw bytes, not Base64.
answer=$(curl -sS -X POST "$url/api/v1/background/remove/multipart" \
  -H "Authorization: $managed" -H 'Accept: image/webp' \
  -F "file=@$input" -F format=webp -F crop=true \
  -o "$output" -w '%{http_code} %header{x-width}x%header{x-height}')

case $answer in
  200\ *) echo "wrote $output (${answer#200 })" ;;
  *) echo "failed: HTTP $answer" >&2; cat "$output" >&2; echo >&2; rm -f "$output"; exit 1 ;;
esac
