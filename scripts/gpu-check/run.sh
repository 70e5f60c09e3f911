#!/usr/bin/env bash
# The GPU check, on the GPU host: unpacks what prepare.sh carried (into ./gpu-check-work beside
# the folders, or $WORK; nothing outside it), then measures Cutout end to end on WebGPU and on
# the CPU alone on the same host (measure.mjs), and prints the figures.
#
#   gpu-check-1/run.sh [measure.mjs options]     e.g. --clients 16 --seconds 60
#
# VK_DRIVER_FILES: the GPU driver's Vulkan manifest; default: the first nvidia_icd.json found in
# the usual folders (NVIDIA's driver installs it).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="${WORK:-$(dirname "$HERE")/gpu-check-work}"
mkdir -p "$WORK"
cd "$WORK"

[ -x node ] || { xz -dc "$HERE/node.xz" > node.partial && chmod +x node.partial && mv node.partial node; }
[ -d cutout ] || tar -xJf "$HERE/app.tar.xz"
if [ ! -d root ]; then
  for deb in "$HERE"/debs/*.deb; do dpkg -x "$deb" root.partial; done
  mv root.partial root
fi
DATA="cutout/node_modules/@imgly/background-removal-data/dist"
for part in "$(dirname "$HERE")"/gpu-check-[2-9]; do
  if [ -d "$part/model" ]; then
    for chunk in "$part"/model/*; do [ -e "$DATA/$(basename "$chunk")" ] || cp "$chunk" "$DATA/"; done
  fi
done
missing=$(./node -e "const fs=require('fs');const r=require('./$DATA/resources.json');console.log(r['/models/medium'].chunks.filter(c=>!fs.existsSync('$DATA/'+c.hash)).length)")
[ "$missing" = 0 ] || { echo "run.sh: $missing chunks of the model are missing: put gpu-check-2 and gpu-check-3 beside gpu-check-1" >&2; exit 1; }

export LD_LIBRARY_PATH="$WORK/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  for dir in /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/share/vulkan/icd.d; do
    if [ -f "$dir/nvidia_icd.json" ]; then export VK_DRIVER_FILES="$dir/nvidia_icd.json"; break; fi
  done
fi
echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset, the loader searches its folders}"
exec ./node "$HERE/measure.mjs" --cutout "$WORK/cutout" --node "$WORK/node" "$@"
