#!/usr/bin/env bash
# Installs and starts what the test bed needs on the controller: Debian's
# docker.io and debootstrap, and a running dockerd. Safe to run twice.
set -euo pipefail

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  echo "host-setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  echo "host-setup: starting dockerd (log: /var/log/sparkfleet-dockerd.log)"
  setsid dockerd >/var/log/sparkfleet-dockerd.log 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "host-setup: dockerd did not come up, see /var/log/sparkfleet-dockerd.log" >&2; exit 1; }
fi
