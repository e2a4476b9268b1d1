#!/usr/bin/env python3
"""The model store's part of ``make bench`` (tools/bench.sh): a generated checkpoint of
about 1 GiB placed on both simulated hosts, side by side in one run,

- ``role``: through sparkfleet.gb10.model_store (one host fetches from the hub, the other
  receives over the fabric with rsync, both prove every file);
- ``direct``: each host fetches it from the hub itself with the real client
  (``snapshot_download``), as a fleet without the store would.

The hub is the test stand-in (tests/sim/hub/hub_standin.py) running on the controller; the
bytes each host fetched from it are its own counts. Each case runs ``--runs`` times from
empty stores (the hub client's virtualenv and rsync are installed by an untimed warm-up, so
neither case pays for them). Prints the markdown table on stdout; exits non-zero when a run
failed or the role fetched a byte more than one copy from the hub.

    python3 tools/bench_models.py [--runs 3] [--inventory inventories/sim]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

import runner_events

TOP = runner_events.TOP
sys.path.insert(0, os.path.join(TOP, "tests", "sim", "hub"))

import hub_standin  # noqa: E402  (the test stand-in of the hub)

hub_standin.Handler.log_message = lambda *args: None  # one line per request would bury the table

CACHE = os.environ.get("SPARKFLEET_CACHE", "/var/cache/sparkfleet")
PLAYBOOK = os.path.join(TOP, "tools", "bench_models.yml")
REPO = "sparkfleet-bench/checkpoint"
COMMIT = "5ca1ab1e0ddba11c0ffee0000000000000000001"
WARMUP_REPO = "sparkfleet-bench/tiny"
SHARDS, SHARD_MIB = 4, 256


def checkpoint(directory):
    """The generated checkpoint (random shards and a config), made once and cached."""
    os.makedirs(directory, exist_ok=True)
    for index in range(SHARDS):
        path = os.path.join(directory, "model-%05d-of-%05d.safetensors" % (index + 1, SHARDS))
        if os.path.exists(path) and os.path.getsize(path) == SHARD_MIB << 20:
            continue
        with open(path + ".tmp", "wb") as handle:
            for dummy in range(SHARD_MIB):
                handle.write(os.urandom(1 << 20))
        os.replace(path + ".tmp", path)
    with open(os.path.join(directory, "config.json"), "w") as handle:
        json.dump({"model_type": "llama", "note": "generated bench checkpoint"}, handle)
    return directory


def run_case(inventory, varsfile, tags, name):
    return runner_events.timed_run(PLAYBOOK, inventory, "the %s case" % name, "bench-models",
                                   extra_vars_files=[varsfile], tags=tags)[0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--inventory", default=os.path.join(TOP, "inventories", "sim"))
    args = parser.parse_args(argv)

    repos = {REPO: {"dir": checkpoint(os.path.join(CACHE, "bench", "checkpoint")), "commit": COMMIT, "token": None},
             WARMUP_REPO: {"dir": os.path.join(CACHE, "models", "tiny-llama"), "commit": COMMIT, "token": None}}
    server = hub_standin.serve(repos, "0.0.0.0", 0)
    port = server.server_address[1]
    total = sum(os.path.getsize(os.path.join(repos[REPO]["dir"], f)) for f in os.listdir(repos[REPO]["dir"]))

    def varsfile(name, repo):
        entry = {"name": name, "model": repo, "checkpoint_format": "bf16",
                 "source": {"type": "hf", "repo": repo, "revision": COMMIT}}
        handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump({"bench_hub_port": port, "bench_repo": repo, "bench_commit": COMMIT, "bench_name": name,
                   "model_store_models": [entry]}, handle)
        handle.close()
        return handle.name

    warm, big = varsfile("bench-warmup", WARMUP_REPO), varsfile("bench-checkpoint", REPO)
    figures = {"role": [], "direct": []}
    fetched = {"role": [], "direct": []}
    try:
        # Untimed: rsync, the hub client's virtualenv on every host and the rsync daemon.
        run_case(args.inventory, warm, "warmup,role", "warm-up")
        run_case(args.inventory, warm, "clean", "clean")
        run_case(args.inventory, big, "clean", "clean")
        for index in range(args.runs):
            for case in ("role", "direct"):
                server.hub.stats.clear()
                seconds = run_case(args.inventory, big, case, case)
                hub_bytes = sum(entry["bytes"] for entry in server.hub.stats.values())
                figures[case].append(seconds)
                fetched[case].append(hub_bytes)
                print("bench-models: run %d %s: %.1f s, %d bytes from the hub (%s)" % (
                    index + 1, case, seconds, hub_bytes,
                    ", ".join("%s %d" % (client, entry["bytes"]) for client, entry in sorted(server.hub.stats.items()))),
                    file=sys.stderr)
                run_case(args.inventory, big, "clean", "clean")
    finally:
        server.shutdown()
        for path in (warm, big):
            os.unlink(path)

    print("| placing the %.2f GiB checkpoint on both hosts | min | median | bytes fetched from the hub (each run) |"
          % (total / 2.0 ** 30))
    print("|---|---|---|---|")
    labels = {"role": "model store: one fetch, rsync over the fabric, both proven",
              "direct": "each host fetches it itself (snapshot_download)"}
    for case in ("role", "direct"):
        print("| %s | %.1f s | %.1f s | %s |" % (labels[case], min(figures[case]), statistics.median(figures[case]),
                                                 ", ".join("{:,}".format(b) for b in sorted(set(fetched[case])))))
    # One copy from outside, whatever the number of holders: what the store is for.
    if max(fetched["role"]) > total * 1.01:
        print("bench-models: the role fetched %d bytes from the hub for a %d-byte checkpoint" % (max(fetched["role"]), total),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
