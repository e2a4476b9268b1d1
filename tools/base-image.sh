#!/usr/bin/env bash
# Builds the local base image of the test bed (no registry is reachable):
# Debian bookworm with systemd as PID 1, python3, netplan, OpenSSH's server and
# the tools DGX OS ships (tests/sim/create.yml gives each host its own key and
# reaches it over SSH, as the controller reaches a Spark). The tag carries a hash
# of this recipe, so a changed recipe builds a new image and an unchanged one is
# reused (a second run takes well under a second).
set -euo pipefail

packages="systemd,systemd-sysv,dbus,udev,python3,python3-apt,python3-venv,iproute2,iputils-ping,netplan.io,sudo,gpgv,ca-certificates,procps,kmod,make,git,openssh-server,openssh-sftp-server"
suite=bookworm
mirror=http://deb.debian.org/debian
repo=${SPARKFLEET_IMAGE_REPO:-sparkfleet/spark-sim}
tag=$(printf '%s %s %s' "$packages" "$suite" "$mirror" | sha256sum | cut -c1-12)
image="$repo:$tag"

if docker image inspect "$image" >/dev/null 2>&1; then
  docker tag "$image" "$repo:latest"
  echo "base-image: $image present"
  exit 0
fi

rootfs=$(mktemp -d /var/tmp/sparkfleet-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
echo "base-image: debootstrap $suite into $rootfs (about a minute)"
debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" >/var/tmp/sparkfleet-debootstrap.log 2>&1 \
  || { tail -20 /var/tmp/sparkfleet-debootstrap.log >&2; exit 1; }
# The container has no kernel console: keep getty and the udev settle wait off.
rm -f "$rootfs"/etc/systemd/system/getty.target.wants/* 2>/dev/null || true
tar -C "$rootfs" -c . | docker import -c 'CMD ["/lib/systemd/systemd"]' - "$image" >/dev/null
docker tag "$image" "$repo:latest"
echo "base-image: built $image"
