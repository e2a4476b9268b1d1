#!/usr/bin/env bash
# make bench: times site.yml on the simulated fleet, from fresh containers (the
# first converge) and again with nothing to do (the no-op rerun), and writes
# the figures with the machine they ran on to bench/results.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results.md
mkdir -p bench
log=$(mktemp /var/tmp/sparkfleet-bench.XXXXXX)

run() { # label
  local start end rc
  start=$(date +%s.%N)
  set +e
  ansible-playbook site.yml -i inventories/sim >"$log.$1" 2>&1
  rc=$?
  set -e
  end=$(date +%s.%N)
  changed=$(grep -E '^spark-[0-9]+ +: ' "$log.$1" | sed -E 's/.*changed=([0-9]+).*/\1/' | awk '{s += $1} END {print s}')
  printf '| %s | %s s | %s | %s |\n' "$1" "$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')" "${changed:-?}" "$rc"
  [ "$rc" = 0 ] || { tail -40 "$log.$1" >&2; return 1; }
  # The no-op rerun must change nothing: a figure of a run that changed things is not a no-op figure.
  if [ "$1" = no-op-rerun ] && [ "${changed:-1}" != 0 ]; then
    grep -E '^(changed|TASK)' "$log.$1" | grep -B1 '^changed' >&2 || true
    echo "bench: the rerun changed $changed tasks" >&2
    return 1
  fi
}

ansible-playbook tests/sim/destroy.yml -e @tests/sim/fleet.yml >/dev/null
ansible-playbook tests/sim/create.yml -e @tests/sim/fleet.yml >/dev/null
ansible-playbook tests/sim/demo_prepare.yml -i inventories/sim >/dev/null
{
  echo "# site.yml on the simulated two-Spark fleet"
  echo
  echo "Measured by \`make bench\` on $(date -u +%Y-%m-%d), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)."
  echo
  echo "| run | wall time | changed tasks (all hosts) | exit |"
  echo "|---|---|---|---|"
  run first-converge
  run no-op-rerun
} | tee "$out.tmp"
mv "$out.tmp" "$out"
rm -f "$log" "$log".*
