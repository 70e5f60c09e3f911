#!/usr/bin/env bash
# Prepares the GPU check for a Linux x64 host with a GPU and no npm, no registry and no
# network: folders of at most 64 MiB each, to carry there one at a time.
#
#   scripts/gpu-check/prepare.sh [OUT]      (default OUT: ./gpu-check-out)
#
# OUT/gpu-check-1: this machine's Node binary (xz), Cutout compiled (dist/) with its
#   production dependencies for Linux x64 (onnxruntime-node's Linux x64 binaries only; the
#   model package without its model), the Debian packages of the Vulkan loader and libglvnd
#   (to unpack with `dpkg -x`, no root), run.sh and measure.mjs.
# OUT/gpu-check-2, -3: the bundled model's chunks (88 MB of float16 weights, which do not
#   compress), as @imgly/background-removal-data ships them.
#
# On the GPU host, with the folders side by side:  gpu-check-1/run.sh
# (README.md beside this script says what it measures and what the host needs.)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="$(mkdir -p "${1:-gpu-check-out}" && cd "${1:-gpu-check-out}" && pwd)"
LIMIT=$((64 * 1024 * 1024))
cd "$ROOT"

[ "$(uname -s)/$(uname -m)" = "Linux/x86_64" ] || { echo "prepare.sh: run it on Linux x64, the GPU host's platform" >&2; exit 1; }
# The compiled server is what runs there: build it from this checkout.
[ -n "${GPU_CHECK_SKIP_BUILD:-}" ] || npm run build
rm -rf "$OUT"/gpu-check-*
ONE="$OUT/gpu-check-1"
mkdir -p "$ONE/debs"

# Node: the binary this machine runs Cutout with, one file.
echo "node $(node --version)"
xz -9 -T0 -c "$(command -v node)" > "$ONE/node.xz"

# Cutout and its production dependencies, as the tree npm installed them here (the TypeScript
# client, which the CLI imports, is a workspace: node_modules/@cutout/client links to it).
# (A package's own node_modules/ comes with it: only the top-level folders are named.)
DEPS="$(npm ls --omit=dev --parseable --all 2>/dev/null | grep '/node_modules/' | sed "s|^$ROOT/||" | grep -v '^node_modules/.*/node_modules/' | sort -u)"
MODEL_DATA=node_modules/@imgly/background-removal-data
# The pure-JS onnxruntime-web comes with the model package and is never loaded by Cutout.
tar -C "$ROOT" --transform 's|^|cutout/|S' -cf - \
  --exclude="$MODEL_DATA/dist/*[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]" \
  --exclude='node_modules/onnxruntime-node/bin/napi-v6/darwin' --exclude='node_modules/onnxruntime-node/bin/napi-v6/win32' \
  --exclude='node_modules/onnxruntime-node/bin/napi-v6/linux/arm64' --exclude='node_modules/onnxruntime-web' \
  --exclude='node_modules/better-sqlite3/deps' --exclude='node_modules/better-sqlite3/src' \
  --exclude='*.map' --exclude='*.d.ts' --exclude='*.md' \
  package.json bin dist clients/typescript/package.json clients/typescript/dist $DEPS | xz -9 -T0 > "$ONE/app.tar.xz"

# The Vulkan loader and libglvnd, which NVIDIA's Vulkan driver loads (Debian's, this machine's suite).
DEBS="libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2"
( cd "$ONE/debs" && { apt-get download $DEBS >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get download $DEBS >/dev/null; }; } )
cp scripts/gpu-check/run.sh scripts/gpu-check/measure.mjs scripts/gpu-check/README.md "$ONE/"

# The model's chunks (resources.json names those of the medium model), spread over folders.
part=2
size=0
mkdir -p "$OUT/gpu-check-$part/model"
for chunk in $(node -e "const r=require('./$MODEL_DATA/dist/resources.json'); console.log(r['/models/medium'].chunks.map(c=>c.hash).join(' '))"); do
  bytes=$(stat -c %s "$MODEL_DATA/dist/$chunk")
  if [ $((size + bytes)) -gt $((LIMIT - 1024 * 1024)) ]; then part=$((part + 1)); size=0; mkdir -p "$OUT/gpu-check-$part/model"; fi
  cp "$MODEL_DATA/dist/$chunk" "$OUT/gpu-check-$part/model/"
  size=$((size + bytes))
done

status=0
for dir in "$OUT"/gpu-check-*; do
  bytes=$(du -sb "$dir" | cut -f1)
  printf '%s\t%.1f MiB\n' "$dir" "$(echo "$bytes / 1048576" | bc -l)"
  [ "$bytes" -le "$LIMIT" ] || { echo "prepare.sh: $dir is over 64 MiB" >&2; status=1; }
done
exit $status
