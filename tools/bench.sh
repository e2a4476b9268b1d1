#!/usr/bin/env bash
# make bench: times site.yml on the simulated fleet, from fresh containers (the
# first converge) and again with nothing to do (the no-op rerun), BENCH_RUNS (3) times each, writes down
# the no-op rerun's floor (tools/bench_floor.py), then places a
# ~1 GiB checkpoint on both hosts two ways (tools/bench_models.py), times the
# nccl stage on four hosts built once and built everywhere (tools/bench_nccl.py), times the
# host-level stages on two and eight hosts (tools/bench_scale.py), the no-op rerun over SSH and docker exec and
# with each engine in turns, with a profile of the controller (tools/bench_engines.py), and writes
# the figures with the machine they ran on to bench/results.md. Each run goes
# through ansible-runner (tools/bench.py): changed counts come from its stats.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results.md
mkdir -p bench
runs=${BENCH_RUNS:-3}
# The figures of the previous make bench, for the before column (read before $out is replaced).
before=$(mktemp)
trap 'rm -f "$before"' EXIT
[ -f "$out" ] && cp "$out" "$before"
{
  echo "# site.yml on the simulated two-Spark fleet"
  echo
  echo "Measured by \`make bench\` on $(date -u +%Y-%m-%d), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)."
  echo
  echo "Each figure over $runs runs (the first converge on new containers each time); *before* is the"
  echo "same figure of the previous \`make bench\` (its median, or its one run), with its date."
  echo
  echo "| run | min | median | runs | changed tasks (all hosts, each run) | before |"
  echo "|---|---|---|---|---|---|"
  python3 tools/bench.py first-converge --fresh --runs "$runs" --before "$before"
  python3 tools/bench.py no-op-rerun --no-op --runs "$runs" --before "$before"
  echo
  echo "## The floor of the no-op rerun"
  echo
  echo "On the fleet the no-op runs left: one trivial task of each kind timed over the same connection,"
  echo "times the tasks one more no-op rerun runs on its busiest host (tools/bench_floor.py)."
  echo
  python3 tools/bench_floor.py
  echo
  echo "## Model weights on the two simulated hosts"
  echo
  echo "A generated checkpoint on the hub stand-in (tests/sim/hub/hub_standin.py, on the controller),"
  echo "placed on both hosts from empty stores; tools/bench_models.py, 3 runs of each case."
  echo
  python3 tools/bench_models.py --runs 3
  echo
  echo "## NCCL built once per fleet"
  echo
  echo "The nccl stage on four identical simulated Sparks of their own (containers nccl-bench-1..4),"
  echo "each run from hosts with no installed prefix; sources, build packages and rsync in place"
  echo "(an untimed warm-up); tools/bench_nccl.py, 3 runs of each case."
  echo
  python3 tools/bench_nccl.py --hosts 4 --runs 3
  echo
  echo "## Scale: the host-level stages on two and eight hosts"
  echo
  echo "site.yml --tags driver,network,nccl (preflight and its facts included; no vLLM) on simulated Sparks of"
  echo "their own (containers scale-bench-N): a first converge over SSH, then no-op reruns that change nothing,"
  echo "over SSH (as users reach Sparks) and docker exec in turns on the same hosts; controller CPU is"
  echo "ansible-playbook, its forks and the ssh or docker clients they start (not the SSH masters, which"
  echo "detach); tools/bench_scale.py."
  echo
  python3 tools/bench_scale.py --hosts 2,8 --runs "$runs"
  echo
  echo "## Connections and engines, in turns on the same fleet"
  echo
  echo "The no-op rerun of site.yml on the fleet of the first section (inventories/sim), each way of running it"
  echo "in turn: SSH (what users have), docker exec, SSH without the warm_plugins callback, the free strategy,"
  echo "Mitogen; then where the controller's CPU went in one more rerun (tools/bench_engines.py)."
  echo
  python3 tools/bench_engines.py --runs "$runs" --profile
} | tee "$out.tmp"
# The faults section is make chaos's (tools/chaos.py): keep it.
if [ -f "$out" ] && grep -q '^## Faults survived' "$out"; then
  { echo; sed -n '/^## Faults survived/,$p' "$out"; } >> "$out.tmp"
fi
mv "$out.tmp" "$out"
