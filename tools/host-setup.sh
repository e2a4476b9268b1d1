#!/usr/bin/env bash
# Installs and starts what the test bed needs on the controller: Debian's
# docker.io and debootstrap, openssh-client (the simulated Sparks are reached over SSH,
# tests/sim/README.md), qemu-user-static, grub-common (grub-editenv), prometheus for promtool (`make monitoring`),
# and a running dockerd.
# Safe to run twice.
set -euo pipefail

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
# qemu-user: the cluster scenario runs the GPU gate on an emulated CPU without AVX-512 (molecule/cluster/verify.yml).
command -v qemu-x86_64-static >/dev/null 2>&1 || need+=(qemu-user-static)
# zstd: tools/stack_wheels.py reads the kernels of vLLM's compressed fatbins (the contract's Marlin check).
command -v zstd >/dev/null 2>&1 || need+=(zstd)
if [ ${#need[@]} -gt 0 ]; then
  echo "host-setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
# grub-editenv (grub-common): the unit tests of sparkfleet.gb10.grub_next_boot write a real grubenv with it, as the
# OS update does on a Spark (and the updates scenario in its simulated hosts).
if ! command -v grub-editenv >/dev/null 2>&1; then
  echo "host-setup: installing grub-common (for grub-editenv)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends grub-common >/dev/null
fi
# promtool (`make monitoring`) comes with Debian's prometheus package; only the
# tool is wanted, so a Prometheus server the package may have started stays off.
if ! command -v promtool >/dev/null 2>&1; then
  echo "host-setup: installing prometheus (for promtool)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  if systemctl is-active --quiet prometheus 2>/dev/null; then
    echo "host-setup: disabling the prometheus service the package started (the tests use promtool only)"
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
fi

# Docker's networks must never take an address range the fabric uses: once its
# 172.17-31 pools are spent docker hands out 192.168.x.0/20 subnets, and a host
# route to 192.168.96.0/20 swallows bridged fabric traffic of 192.168.100.0/24.
# Keep every docker network inside 10.213.0.0/16.
pools='{"base": "10.213.0.0/16", "size": 24}'
if ! grep -q '10.213.0.0/16' /etc/docker/daemon.json 2>/dev/null; then
  mkdir -p /etc/docker
  if [ -s /etc/docker/daemon.json ]; then
    python3 - "$pools" <<'PY'
import json, sys
path = "/etc/docker/daemon.json"
with open(path) as handle:
    config = json.load(handle)
config["default-address-pools"] = [json.loads(sys.argv[1])]
with open(path, "w") as handle:
    json.dump(config, handle, indent=2)
PY
  else
    printf '{\n  "default-address-pools": [%s]\n}\n' "$pools" >/etc/docker/daemon.json
  fi
  if docker info >/dev/null 2>&1; then
    echo "host-setup: /etc/docker/daemon.json now keeps docker networks in 10.213.0.0/16;" \
         "restarting dockerd to apply it" >&2
    pkill -x dockerd || true
    for _ in $(seq 1 30); do pgrep -x dockerd >/dev/null || break; sleep 1; done
  fi
fi

if ! docker info >/dev/null 2>&1; then
  echo "host-setup: starting dockerd (log: /var/log/sparkfleet-dockerd.log)"
  # dockerd outlives this script: it must not keep the descriptors it would inherit
  # beyond stdio (a caller's flock on a lock file would otherwise be held for good).
  (
    for fd in /proc/"$BASHPID"/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] && eval "exec $fd>&-"
    done
    exec setsid dockerd >/var/log/sparkfleet-dockerd.log 2>&1 < /dev/null
  ) &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "host-setup: dockerd did not come up, see /var/log/sparkfleet-dockerd.log" >&2; exit 1; }
fi
