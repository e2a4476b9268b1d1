#!/usr/bin/env bash
# The GPU check: host_facts and nccl (real NCCL sources, nccl-tests, the
# bandwidth verdict) against localhost on a machine with an NVIDIA GPU and nvcc.
# Not part of `make test` (CI has no GPU); what it records becomes the fixtures
# under tests/fixtures/gpu and tests/fixtures/nccl_tests/real.
#
#   tools/gpu-check.sh [CAPABILITY...]     e.g. `native 12.1` (default: native)
#
# For each capability ("native" reads it from nvidia-smi; "12.1" forces GB10's
# sm_121, which a non-GB10 GPU cannot run, so nccl-tests shows the missing-SASS
# failure), it runs tools/gpu-check.yml, then the nccl role again, which must
# change nothing. Environment:
#   GPU_CHECK_NCCL_ARCHIVE        NCCL source archive at the rule book's tag (required)
#   GPU_CHECK_NCCL_TESTS_ARCHIVE  nccl-tests source archive (required)
#   GPU_CHECK_OUT                 where recordings and logs go (default ./gpu-check-out)
#   GPU_CHECK_WHEELS              a folder of controller wheels (ansible-core and its
#                                 needs) installed into a scratch path when ansible
#                                 is missing, for machines without a network
#   GPU_CHECK_MACHINE             the machine's name in the recordings' headers
#   GPU_CHECK_NVCC                nvcc to build with (default: the one on PATH)
# Make the archives from git: git archive --prefix=nccl/ -o nccl.tar.gz v2.28.9-1
set -euo pipefail
cd "$(dirname "$0")/.."

out=${GPU_CHECK_OUT:-$PWD/gpu-check-out}
mkdir -p "$out"
: "${GPU_CHECK_NCCL_ARCHIVE:?set GPU_CHECK_NCCL_ARCHIVE to an NCCL source archive}"
: "${GPU_CHECK_NCCL_TESTS_ARCHIVE:?set GPU_CHECK_NCCL_TESTS_ARCHIVE to an nccl-tests source archive}"
machine=${GPU_CHECK_MACHINE:-$(uname -m), $(nproc) cores}
nvcc=${GPU_CHECK_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on a shared multi-GPU host

if ! command -v ansible-playbook >/dev/null 2>&1; then
  : "${GPU_CHECK_WHEELS:?ansible-playbook is missing: install ansible-core or set GPU_CHECK_WHEELS}"
  site=$(mktemp -d /tmp/gpu-check-site.XXXXXX)
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$GPU_CHECK_WHEELS"/*.whl
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PATH="$site/bin:$PATH"
fi
export ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
inventory=(-i 'localhost,' -c local -e ansible_python_interpreter="$(command -v python3)")

status=0
for cap in "${@:-native}"; do
  [ "$cap" = native ] && cap_var="" || cap_var=$cap
  vars=(-e gpu_check_out="$out" -e "gpu_check_machine=$machine"
        -e "gpu_check_compute_capability=$cap_var" -e "nccl_nvcc=$nvcc"
        -e gpu_check_nccl_archive="$(realpath "$GPU_CHECK_NCCL_ARCHIVE")"
        -e gpu_check_nccl_tests_archive="$(realpath "$GPU_CHECK_NCCL_TESTS_ARCHIVE")")
  echo "=== gpu-check $cap: converge"
  start=$(date +%s)
  ansible-playbook tools/gpu-check.yml "${inventory[@]}" "${vars[@]}" >"$out/converge-$cap.log" 2>&1 \
    || { status=1; tail -40 "$out/converge-$cap.log"; continue; }
  echo "converge took $(( $(date +%s) - start )) s"
  echo "=== gpu-check $cap: the nccl role again, which must change nothing"
  start=$(date +%s)
  ansible-playbook tools/gpu-check.yml "${inventory[@]}" "${vars[@]}" --tags nccl >"$out/rerun-$cap.log" 2>&1 \
    || { status=1; tail -40 "$out/rerun-$cap.log"; continue; }
  echo "rerun took $(( $(date +%s) - start )) s"
  recap=$(grep -E '^localhost +: ' "$out/rerun-$cap.log")
  echo "$recap"
  case "$recap" in *" changed=0 "*) ;; *) echo "gpu-check $cap: the rerun changed something" >&2; status=1 ;; esac
done
ls -l "$out"
exit $status
