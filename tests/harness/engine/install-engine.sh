#!/usr/bin/env bash
# A Docker engine for the compose test (`make test-compose`), as root on a Debian bookworm machine:
# Engine 26 and Compose 2.26 (the first with volume `subpath` mounts, which compose.yaml uses) come
# from Debian trixie's docker.io, docker-cli, containerd and docker-compose packages, installed with
# dpkg -i beside bookworm's runc, tini and iptables. Trixie's package lists live in a private apt
# state under $CACHE, so the machine's own apt sources and pins are left as they were.
# Idempotent: it does nothing when the engine and Compose are already recent enough.
set -euo pipefail

CACHE=${AURORA_ENGINE_CACHE:-/var/cache/aurora-engine}
TRIXIE_PACKAGES=(docker.io docker-cli containerd docker-compose)
BOOKWORM_PACKAGES=(runc tini iptables)

recent_enough() {
  command -v dockerd >/dev/null || return 1
  local engine compose
  engine=$(dockerd --version | sed -n 's/^Docker version \([0-9]*\)\..*/\1/p')
  compose=$(docker compose version --short 2>/dev/null | sed 's/^v//') || return 1
  [ "${engine:-0}" -ge 26 ] || return 1
  # sort -V: is 2.26.0 the smaller of the two?
  [ "$(printf '2.26.0\n%s\n' "$compose" | sort -V | head -1)" = 2.26.0 ]
}

if recent_enough; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-engine: Docker Engine 26+ with Compose 2.26+ is needed; run this script as root" >&2
  exit 1
fi

echo "install-engine: Docker Engine and Compose from Debian trixie (packages cached in $CACHE)"
apt_state=(-o "Dir::Etc::SourceList=$CACHE/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null -o APT::Sandbox::User=root
           -o "Dir::State::Lists=$CACHE/apt/lists" -o "Dir::Cache=$CACHE/apt/cache")
mkdir -p "$CACHE/apt/lists/partial" "$CACHE/apt/cache/archives/partial" "$CACHE/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  > "$CACHE/apt/sources.list"

DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${BOOKWORM_PACKAGES[@]}" >/dev/null \
  || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
         "${BOOKWORM_PACKAGES[@]}" >/dev/null; }

if ! ls "$CACHE"/debs/docker.io_*.deb >/dev/null 2>&1; then
  apt-get "${apt_state[@]}" update -q >/dev/null
  (cd "$CACHE/debs" && apt-get "${apt_state[@]}" download "${TRIXIE_PACKAGES[@]}")
fi

# No init system starts services here: the harness starts dockerd itself, so the packages'
# maintainer scripts must not try (policy-rc.d 101 = "not allowed"), unless the machine says otherwise.
created_policy=
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  created_policy=1
fi
trap '[ -z "$created_policy" ] || rm -f /usr/sbin/policy-rc.d' EXIT
DEBIAN_FRONTEND=noninteractive dpkg -i --force-confold "$CACHE"/debs/*.deb >/dev/null

recent_enough || { echo "install-engine: the installed engine or Compose is still older than 26 / 2.26" >&2; exit 1; }
dockerd --version
docker compose version
