#!/usr/bin/env bash
# Makes this Debian machine able to build and run deploy/Dockerfile with podman, with no
# container registry in reach: Debian's podman, runc and podman-compose; a containers.conf;
# and stand-ins for the Dockerfile's two base images (node:20-bookworm-slim, debian:bookworm-slim)
# made here from Debian's packages (debootstrap) and this machine's Node 20. Safe to run
# again: each step checks first, and a machine already set up takes about a second.
#
#   sudo scripts/container/setup-podman.sh        (scripts/container/test-container.ts runs it)
#
# Why each piece:
# - runc, not crun: this machine's cgroups are hybrid (v1), which Debian's crun 1.8 refuses;
#   and runc may not set every limit the host has, so containers.conf names ones it may.
# - The base images: the Dockerfile's FROMs, tagged under the same names, so that the
#   Dockerfile an operator builds against Docker Hub is the one built here (--pull=never).
#   They hold what the official images hold for Cutout's purpose: Debian bookworm without
#   docs and locales (slim); and, for node:20, Node 20 in /usr/local with its headers, npm 10,
#   and the user `node` (1000:1000).
set -euo pipefail

BASE_IMAGE="${CUTOUT_BASE_IMAGE:-docker.io/library/node:20-bookworm-slim}"
DEBIAN_IMAGE="${CUTOUT_DEBIAN_IMAGE:-docker.io/library/debian:bookworm-slim}"
NPM_VERSION="${CUTOUT_BASE_NPM:-10.8.2}"
NODE_BIN="$(command -v node)"
NODE_VERSION="$("$NODE_BIN" --version)"
say() { echo "[setup-podman] $*" >&2; }

if [ "$(id -u)" != 0 ]; then
  say "run as root (it installs Debian packages and writes /etc/containers)"
  exit 1
fi

# 1. Debian's packages.
missing=""
for pair in podman:podman runc:runc debootstrap:debootstrap podman-compose:podman-compose; do
  command -v "${pair%%:*}" >/dev/null || missing="$missing ${pair#*:}"
done
if [ -n "$missing" ]; then
  say "installing$missing"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
fi

# 2. The base images, unless this Node's and this npm's are already there.
label="$NODE_VERSION npm-$NPM_VERSION slim"
if [ "$(podman image inspect --format '{{ index .Labels "cutout.base" }}' "$BASE_IMAGE" 2>/dev/null)" == "$label" ] \
  && [ "$(podman image inspect --format '{{ index .Labels "cutout.base" }}' "$DEBIAN_IMAGE" 2>/dev/null)" == "$label" ]; then
  say "$BASE_IMAGE and $DEBIAN_IMAGE are there ($label)"
else
  say "making $DEBIAN_IMAGE and $BASE_IMAGE ($label) with debootstrap; about a minute"
  work="$(mktemp -d /var/tmp/cutout-base.XXXXXX)"
  trap 'rm -rf "$work"' EXIT
  rootfs="$work/rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 || {
    tail -n 20 "$work/debootstrap.log" >&2
    exit 1
  }
  cat >"$rootfs/etc/apt/sources.list" <<'EOF'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
  # What debian:bookworm-slim leaves out, now and in every package installed later.
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
EOF
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  rm -rf "$rootfs"/usr/share/groff/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* "$rootfs"/usr/share/man/*
  rm -rf "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  # debian:bookworm-slim, the runtime stage's base: Debian alone.
  tar -C "$rootfs" -c . | podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "LABEL cutout.base=\"$label\"" \
    --change 'CMD ["bash"]' \
    - "$DEBIAN_IMAGE" >/dev/null
  # Node as the official image has it: the binary in /usr/local/bin, its headers beside it
  # (what node-gyp builds addons against), and npm 10 from the npm registry.
  install -D -m 755 "$NODE_BIN" "$rootfs/usr/local/bin/node"
  node_include="$(dirname "$(dirname "$NODE_BIN")")/include/node"
  mkdir -p "$rootfs/usr/local/include"
  cp -a "$node_include" "$rootfs/usr/local/include/node"
  npm install --global --prefix "$rootfs/usr/local" --no-audit --no-fund "npm@$NPM_VERSION" >"$work/npm.log" 2>&1 || {
    cat "$work/npm.log" >&2
    exit 1
  }
  chroot "$rootfs" /bin/sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
  tar -C "$rootfs" -c . | podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=${NODE_VERSION#v}" \
    --change "LABEL cutout.base=\"$label\"" \
    --change 'CMD ["node"]' \
    - "$BASE_IMAGE" >/dev/null
  say "made $DEBIAN_IMAGE ($(podman image inspect --format '{{.Size}}' "$DEBIAN_IMAGE") bytes) and $BASE_IMAGE ($(podman image inspect --format '{{.Size}}' "$BASE_IMAGE") bytes)"
fi

# 3. containers.conf: runc, and limits that runc may set. The host's own are tried first;
# where runc is refused them (on this machine RLIMIT_NPROC above 32768 is, though the host's is
# higher), the next lower until a container starts.
conf=/etc/containers/containers.conf
write_conf() {
  mkdir -p /etc/containers
  printf '# Written by Cutout'"'"'s scripts/container/setup-podman.sh.\n[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n\n[engine]\nruntime = "runc"\n' "$1" "$1" "$2" "$2" >"$conf"
}
starts() { podman run --rm --network none "$BASE_IMAGE" true >/dev/null 2>&1; }
if grep -qs "setup-podman.sh" "$conf" && starts; then
  say "$conf is there, and a container starts"
else
  if [ -s "$conf" ] && ! grep -q "setup-podman.sh" "$conf"; then
    cp "$conf" "$conf.before-cutout"
    say "kept the previous $conf as $conf.before-cutout"
  fi
  nofile="$(ulimit -Hn)"
  started=""
  for nproc in "$(ulimit -Hu)" 65536 32768 16384 4096; do
    write_conf "$nofile" "$nproc"
    if starts; then started="$nproc"; break; fi
  done
  if [ -z "$started" ]; then
    say "no container starts with runc here, whatever the limits: podman run --rm $BASE_IMAGE true"
    podman run --rm --network none "$BASE_IMAGE" true
    exit 1
  fi
  say "wrote $conf (nofile $nofile, nproc $started)"
fi
