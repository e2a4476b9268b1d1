#!/usr/bin/env bash
# Downloads, once, the CUDA wheels the `nccl` Molecule scenario installs inside
# the simulated Sparks (no index there, `pip install --no-index`):
#   ${SPARKFLEET_CACHE:-/var/cache/sparkfleet}/wheelhouse/cuda/
#     nvcc, cuobjdump and the CUDA runtime headers from PyPI (CUDA 13.x, can
#     build sm_121) with their dependencies, and the PyPI NCCL wheel
#     (nvidia-nccl-cu12==2.28.9) whose libnccl carries no sm_121 SASS: the
#     negative case of the role's check.
# It lives under wheelhouse/ because the test harness mounts only that
# directory (read-only, at /srv/wheelhouse) into the containers.
# A stamp of the inputs (this script, the pins, python and platform) makes a
# second run return at once. SPARKFLEET_CUDA_WHEELS_FORCE=1 downloads again.
set -euo pipefail

cache=${SPARKFLEET_CACHE:-/var/cache/sparkfleet}
dest="$cache/wheelhouse/cuda"
python=${SPARKFLEET_PYTHON:-python3}

cuda_pins=${SPARKFLEET_CUDA_PINS:-nvidia-cuda-nvcc==13.5.37 nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-runtime==13.5.37}
nccl_wheel_pin=${SPARKFLEET_NCCL_WHEEL_PIN:-nvidia-nccl-cu12==2.28.9}

stamp_input() {
  sha256sum "$0" | cut -d' ' -f1
  printf '%s\n' "$cuda_pins" "$nccl_wheel_pin"
  "$python" -c 'import sys, platform; print(sys.version_info[:2], platform.machine())'
}
stamp=$(stamp_input | sha256sum | cut -d' ' -f1)
if [ "${SPARKFLEET_CUDA_WHEELS_FORCE:-0}" != 1 ] && [ -f "$dest/.stamp" ] \
   && [ "$(cat "$dest/.stamp")" = "$stamp" ]; then
  echo "cuda-wheels: up to date ($dest, $(find "$dest" -maxdepth 1 -name '*.whl' | wc -l) wheels)"
  exit 0
fi

mkdir -p "$dest"
rm -f "$dest/.stamp"
echo "cuda-wheels: downloading $cuda_pins and $nccl_wheel_pin into $dest (~400 MB, once)"
# shellcheck disable=SC2086
"$python" -m pip download -q -d "$dest" $cuda_pins
"$python" -m pip download -q --no-deps -d "$dest" "$nccl_wheel_pin"

# What the scenario installs, by name: `pip install --no-index --find-links DIR -r`.
# shellcheck disable=SC2086
printf '%s\n' $cuda_pins >"$dest/cuda-requirements.txt"
printf '%s\n' "$nccl_wheel_pin" >"$dest/nccl-wheel-requirements.txt"

echo "$stamp" >"$dest/.stamp"
echo "cuda-wheels: ready ($dest, $(find "$dest" -maxdepth 1 -name '*.whl' | wc -l) wheels, $(du -sh "$dest" | cut -f1))"
