#!/usr/bin/env python3
"""make chaos: faults on the simulated fleet that ``make demo`` left running (spark-1 heads
the tensor-parallel model tiny-tp and Ray, spark-2 follows), each timed to recovery with no
person in the loop. Exits non-zero when a fault does not recover within its limit.

Faults (``--faults`` picks; all by default, in this order):

- ``head-kill``: SIGKILL to the head's vLLM unit; recovered when a completion answers again.
- ``follower-kill``: SIGKILL to the follower's headless rank; recovered the same way (the
  head notices the lost rank, exits, restarts; the follower's head watch restarts it).
- ``ray-head-restart``: the Ray head's unit restarted; recovered when both members are
  alive again (the state API, with the token).
- ``crash-loop``: the head's vLLM unit made unable to start (a runtime drop-in whose
  ExecStart exits 3, gone at the next boot); it must stop at its StartLimitBurst (failed,
  start-limit-hit) with no process and no memory left in its cgroup, and the health
  probe's metric must say failed. Then the drop-in is removed and the unit started: the
  recovery is timed like the others.
- ``memory-pressure``: unified memory runs out on the head; the memory guard (earlyoom, role memory_guard) must
  kill a vLLM process, nothing else, while the host keeps answering, and systemd restart the unit; recovered when
  a completion answers. The eater is bounded by a cgroup limit and earlyoom reads a simulated Spark's meminfo, never
  the test machine's: see tools/chaos_memory.py.
- ``host-restart``: ``docker restart`` of the follower's container (a reboot); recovered when
  a completion answers, both Ray members are alive and the follower takes a new SSH login (as users
  reach it: ``ssh -F`` the sim's ssh_config, see ``ssh()``), with the fabric address and MTU back,
  the firewall table loaded, the firewall before the network and the Ray worker, the
  network before vLLM, and the NVIDIA device-node unit before vLLM and the Ray worker. A container gets docker's
  interface name at each start where a Spark's udev gives
  the QSFP port its name: a small boot unit, clearly a sim stand-in, renames it first.

- ``member-away``: the follower's container stopped for longer than the head's start-limit
  window. A head's start first waits for its members' page-cache drops (TimeoutStartSec, rule
  members_drop_page_cache), and a Spark's vLLM (ray executor) then waits 1800 s for its placement
  group and exits; the sim's mp executor has no such wait, so a runtime drop-in on the head (gone at
  the next boot) scales them down: TimeoutStartSec and RuntimeMaxSec (the waits; TimeoutStopSec 5 s,
  since a Spark's vLLM exits by itself then), StartLimitIntervalSec/StartLimitBurst (the window),
  and one on the retry timer (vllm_service_retry_after_sec). The head must reach its start limit
  (failed), be started again by its OnFailure= timer while the member is away, without a restart
  storm, and serve again by itself once the member is back (the drop-ins removed first): timed
  from the member's start.
- ``page-cache-drop``: the follower's page cache filled, then the head's vLLM unit started by hand (``systemctl
  restart``) and, after it failed for good, by its retry timer; each time the follower must have dropped its page
  cache, asked by the head's start, after the fill and before the head's vLLM process started, and the filled pages
  must be gone (rule members_drop_page_cache). The follower's own drop is off meanwhile, as on a ray follower, which
  has no vLLM unit of its own. See tools/chaos_page_cache.py.
- ``rolling-update``: the fleet switched to independent hosts (``inventories/sim-independent``:
  spark-1 serves tiny-a, spark-2 tiny-b, no model spans hosts), then
  ``playbooks/rolling_update.yml --limit spark-2`` with a changed setting for tiny-b (a copy of
  that inventory with ``max_num_seqs`` 2) while a bounded load generator on spark-1 (one
  request at a time, loopback only) sends completions to tiny-a. Passes with zero failed
  requests on spark-1 during the whole roll, spark-1's vLLM process untouched (same MainPID,
  no restart) and spark-2's restarted with the new setting. The fleet is then put back to
  ``inventories/sim`` (what ``make demo`` left). The time is the roll's.
- ``os-update``: ``playbooks/os_update.yml`` rolls a kernel update (stand-in packages) through both hosts of
  ``inventories/sim-independent``, one at a time, ``docker restart`` as the reboot, while the other host serves a
  bounded load: zero failed requests, the other host's vLLM untouched, the updated host on the new kernel and
  serving. See tools/chaos_os_update.py.

Each fault starts from a serving fleet whose vLLM units' start counters are cleared
(``systemctl reset-failed``), so faults do not add up towards a unit's StartLimitBurst.
Prints one markdown row per fault (fault, time to recovery, what was checked).

    python3 tools/chaos.py [--faults head-kill,crash-loop] [--limit 600]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types

import yaml

HEAD, FOLLOWER = "spark-1", "spark-2"
MODEL = "tiny-tp"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Unit names, the dashboard port and the cluster token's path, from their homes (the roles' defaults, the
# fleet defaults).
sys.path.insert(0, os.path.join(REPO, "collections"))
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import fleet_default  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook  # noqa: E402
import chaos_memory  # noqa: E402  tools/, beside this file
import chaos_os_update  # noqa: E402  tools/, beside this file
import chaos_page_cache  # noqa: E402  tools/, beside this file
VLLM_UNIT_PREFIX = fleet_plan.load_role_default("vllm_service", "vllm_service_unit_prefix")
UNIT = "%s%s.service" % (VLLM_UNIT_PREFIX, MODEL)
RAY_HEAD = fleet_default("ray_head_unit") + ".service"
RAY_WORKER = fleet_default("ray_worker_unit") + ".service"
PROBE = fleet_plan.load_role_default("fleet_health", "fleet_health_unit_name") + ".service"
FIREWALL = fleet_plan.load_role_default("fabric_firewall", "fabric_firewall_unit") + ".service"
RAY_DASHBOARD_PORT = fleet_plan.head_port("dashboard")
RAY_TOKEN_FILE = fleet_default("ray_auth_token_file")
PROM = "/var/lib/prometheus/node-exporter/sparkfleet_health.prom"
DROPIN = "/run/systemd/system/%s.d/zz-chaos-cannot-start.conf" % UNIT
FAULTS = ("head-kill", "follower-kill", "ray-head-restart", "crash-loop", "memory-pressure", "host-restart",
          "member-away", "page-cache-drop", "rolling-update", "os-update")
# member-away, scaled down for the sim (seconds): how long a head start may wait for its member,
# the start-limit window and burst, the retry timer's wait, and how long the member stays away.
AWAY_WAIT, AWAY_WINDOW, AWAY_BURST, AWAY_RETRY, AWAY_FOR = 40, 240, 2, 45, 300
AWAY_DROPIN = "/run/systemd/system/%s.d/zz-chaos-member-away.conf" % UNIT
# A Spark's udev names the QSFP port at every boot; a container gets docker's name (eth1) at
# every start. This sim stand-in does the renaming at boot, before networkd reads netplan's
# configuration: the one thing a restarted container lacks that a rebooted Spark has.
RENAME_SCRIPT = """#!/bin/sh
# SIM STAND-IN (tools/chaos.py): udev's predictable name of the fabric port on a Spark.
set -e
ip link show %(name)s >/dev/null 2>&1 && exit 0
dev=$(ip -o link | grep -i "link/ether %(mac)s" | awk -F': ' '{print $2}' | cut -d@ -f1)
[ -n "$dev" ]
ip link set "$dev" down
ip link set "$dev" name %(name)s
# docker gives the port an address of its own network at every start; a Spark's QSFP port
# has only what netplan gives it.
ip addr flush dev %(name)s
ip link set %(name)s up
"""
RENAME_UNIT = """[Unit]
Description=SIM STAND-IN: name the fabric port as udev does on a Spark (tools/chaos.py)
DefaultDependencies=no
After=systemd-udevd.service
Before=network-pre.target systemd-networkd.service
Wants=network-pre.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/sparkfleet-sim-fabric-name

[Install]
WantedBy=sysinit.target
"""
# What must come before what when a host boots (the mp executor's vLLM needs the fabric, not Ray).
# The NVIDIA device nodes (rule nvidia_device_nodes) before both GPU units.
DEVICES = rulebook.setting("nvidia_devices_unit") + ".service"
BOOT_ORDER = ((FIREWALL, "network-online.target"), ("network-online.target", UNIT), (FIREWALL, RAY_WORKER),
              (DEVICES, UNIT), (DEVICES, RAY_WORKER))
RESULTS = os.path.join(REPO, "bench", "results.md")
DEMO_INVENTORY = os.path.join(REPO, "inventories", "sim")
# The fabric port's name on the simulated Sparks, as the sim inventory gives it to the roles.
with open(os.path.join(DEMO_INVENTORY, "group_vars", "sparks", "fabric.yml")) as _handle:
    FABRIC_IFNAME = yaml.safe_load(_handle)["sparkfleet_fabric_ifname"]
INDEPENDENT = os.path.join(REPO, "inventories", "sim-independent")
# The models of inventories/sim-independent (host -> model) and the setting the roll changes.
INDEPENDENT_MODELS = {HEAD: "tiny-a", FOLLOWER: "tiny-b"}
ROLL_SETTING = ("max_num_seqs", 2, "--max-num-seqs 2")
LOGS = os.path.join(REPO, "build", "chaos")
# The ssh_config tests/sim/create.yml writes for the simulated hosts (sim_ssh_config, tests/sim/group_vars/all/sim.yml).
SIM_SSH_CONFIG = os.path.join(os.environ.get("SPARKFLEET_CACHE") or "/var/cache/sparkfleet", "sim-ssh", "config")
LOAD_STOP = "/run/sparkfleet-chaos-load.stop"
SECTION = "## Faults survived (make chaos)"

COMPLETION = r"""
import json, os, sys, urllib.request
body = json.dumps({"model": "%s", "prompt": "Hello, fleet", "max_tokens": 4, "temperature": 0}).encode()
req = urllib.request.Request("http://127.0.0.1:8000/v1/completions", data=body, method="POST",
                             headers={"Content-Type": "application/json",
                                      "Authorization": "Bearer " + os.environ["SPARKFLEET_KEY"]})
try:
    with urllib.request.urlopen(req, timeout=60) as resp:
        sys.exit(0 if json.load(resp)["usage"]["completion_tokens"] == 4 else 1)
except Exception:
    sys.exit(1)
""" % MODEL


# The bounded load of the rolling-update fault: one request at a time to the host's own API over
# loopback, a pause between them, until the stop file appears (or an hour passes); prints what it
# saw as JSON. Bounded because both simulated hosts share the controller's cores: vLLM's CPU
# worker saturating a core would starve the other host's engine start, not test the roll.
LOAD_PAUSE_S = 2.0
LOAD = r"""
import json, os, sys, time, urllib.request
model, stop, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
body = json.dumps({"model": model, "prompt": "Hello, fleet", "max_tokens": 4, "temperature": 0}).encode()
seen = {"ok": 0, "failed": 0, "errors": [], "first_start": None, "last_end": None, "slowest_s": 0.0}
deadline = time.time() + 3600
while not os.path.exists(stop) and time.time() < deadline:
    req = urllib.request.Request("http://127.0.0.1:8000/v1/completions", data=body, method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + os.environ["SPARKFLEET_KEY"]})
    start = time.time()
    seen["first_start"] = seen["first_start"] or start
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            if json.load(resp)["usage"]["completion_tokens"] != 4:
                raise ValueError("not 4 tokens")
        seen["ok"] += 1
    except Exception as exc:
        seen["failed"] += 1
        seen["errors"] = (seen["errors"] + ["%.0f %s" % (start, exc)])[-5:]
    seen["last_end"] = time.time()
    seen["slowest_s"] = max(seen["slowest_s"], seen["last_end"] - start)
    time.sleep(pause)
print(json.dumps(seen))
"""


def sh(host, command, env=None, check=False, timeout=120, script=None, stdin=None):
    """bash -c COMMAND in a simulated host (or python3 reading ``script`` on stdin); env values
    travel as docker exec -e NAME, so a secret is never in an argv."""
    argv = ["docker", "exec", "-i"]
    for name in env or {}:
        argv += ["-e", name]
    argv += [host] + (["python3", "-"] if script is not None else ["bash", "-c", command])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          input=script if script is not None else stdin,
                          env=dict(os.environ, **(env or {})), check=False)
    if check and proc.returncode != 0:
        raise SystemExit("chaos: %s: %s failed (rc %d): %s" % (host, command, proc.returncode, proc.stderr.strip()))
    return proc


def ssh(host, command, timeout=30):
    """COMMAND on a simulated host over a new SSH login, the way users reach a Spark (its key, its address now:
    SIM_SSH_CONFIG), not through a master connection, so sshd itself must let it in. The checks of a fault use
    sh() (docker exec); this proves the host reachable. rc 255 when the login failed or timed out."""
    argv = ["ssh", "-F", SIM_SSH_CONFIG, "-n", "-o", "ControlPath=none", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
            host, command]
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 255, "", "no answer over SSH in %s s" % timeout)


def show(host, unit, *props):
    out = sh(host, "systemctl show %s -p %s" % (unit, ",".join(props)), check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def serving(key):
    try:
        return sh(HEAD, None, env={"SPARKFLEET_KEY": key}, timeout=90, script=COMPLETION).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def ray_bin(host=HEAD):
    """The ray executable the head's unit starts (its ExecStart), so the venv path is the host's own."""
    out = show(host, RAY_HEAD, "ExecStart").get("ExecStart", "")
    found = re.search(r"path=(\S+)", out)
    if not found:
        raise SystemExit("chaos: %s: %s has no ExecStart path (%r)" % (host, RAY_HEAD, out))
    return os.path.join(os.path.dirname(found.group(1)), "ray")


def ray_members_alive():
    out = sh(HEAD, "RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH=%s %s list nodes "
                   "--address=http://127.0.0.1:%d --format=json --filter state=ALIVE 2>/dev/null"
             % (RAY_TOKEN_FILE, ray_bin(), RAY_DASHBOARD_PORT), timeout=60)
    try:
        return len(json.loads(out.stdout)) if out.returncode == 0 else 0
    except ValueError:
        return 0


def wait(predicate, limit, step=2.0):
    """Seconds until predicate() holds, or None after ``limit`` seconds."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if predicate():
            return time.monotonic() - start
        time.sleep(step)
    return None


def clear_counters():
    for host in (HEAD, FOLLOWER):
        sh(host, "systemctl reset-failed %s 2>/dev/null; true" % UNIT)


def fault_kill(host, key, limit):
    sh(host, "systemctl kill -s KILL %s" % UNIT, check=True)
    start = time.monotonic()
    time.sleep(1)
    seconds = wait(lambda: serving(key), limit)
    return (None if seconds is None else time.monotonic() - start), "SIGKILL %s on %s; a completion answered" % (UNIT, host)


def fault_ray_head(key, limit):
    sh(HEAD, "systemctl restart %s" % RAY_HEAD, check=True, timeout=300)
    start = time.monotonic()
    seconds = wait(lambda: ray_members_alive() == 2, limit, step=3)
    ok = seconds is not None and serving(key)
    return (time.monotonic() - start if ok else None), "Ray head restarted; both members alive (state API), the model still serves"


def cgroup_empty(host):
    group = show(host, UNIT, "ControlGroup").get("ControlGroup", "")
    if not group:
        return True
    procs = sh(host, "cat /sys/fs/cgroup%s/cgroup.procs 2>/dev/null" % group).stdout.split()
    return not procs


def fault_crash_loop(key, limit, problems):
    held = show(HEAD, UNIT, "MemoryCurrent").get("MemoryCurrent", "")
    since = sh(HEAD, "date +%s", check=True).stdout.strip()
    sh(HEAD, "mkdir -p %s && printf '[Service]\\nExecStart=\\nExecStart=/bin/sh -c \"exit 3\"\\n' > %s && "
             "systemctl daemon-reload && systemctl restart %s; true" % (os.path.dirname(DROPIN), DROPIN, UNIT), timeout=300)
    stopped = wait(lambda: show(HEAD, UNIT, "ActiveState")["ActiveState"] == "failed", 900, step=3)
    # systemd refuses the next automatic restart ("Start request repeated too quickly"); 252 keeps the
    # last failure's Result (exit-code) then, so the journal line is what says the limit stopped it.
    hit = sh(HEAD, "journalctl -u %s --since @%s --no-pager -o cat | grep -c 'Start request repeated too quickly'"
             % (UNIT, since)).stdout.strip()
    state = show(HEAD, UNIT, "ActiveState", "Result", "NRestarts", "MainPID", "MemoryCurrent", "RestartUSec")
    limit_burst = show(HEAD, UNIT, "StartLimitBurst").get("StartLimitBurst")
    if stopped is None or hit in ("", "0"):
        problems.append("crash-loop: the unit did not stop at its start limit (%s)" % state)
    time.sleep(10)  # longer than the sim's RestartSec: no restart may come any more
    if show(HEAD, UNIT, "NRestarts", "ActiveState") != {"NRestarts": state.get("NRestarts"), "ActiveState": "failed"}:
        problems.append("crash-loop: the unit restarted after its start limit")
    if state.get("MainPID") != "0" or not cgroup_empty(HEAD):
        problems.append("crash-loop: processes left in the unit's cgroup (%s)" % state)
    sh(HEAD, "systemctl start %s" % PROBE, timeout=300)
    failed = [line for line in sh(HEAD, "cat %s" % PROM).stdout.splitlines()
              if line.startswith("sparkfleet_unit_failed{") and 'unit="%s' % UNIT[:-len(".service")] in line]
    if not failed or not all(line.split()[-1] in ("1", "1.0") for line in failed):
        problems.append("crash-loop: the health metric does not say failed: %r" % failed)
    detail = ("start limit hit after %s automatic restart(s) (StartLimitBurst %s, RestartSec %s) in %s s, failed, MainPID %s, "
              "no process in its cgroup, memory %s bytes -> %s; probe: sparkfleet_unit_failed 1" % (
                  state.get("NRestarts"), limit_burst, state.get("RestartUSec"), "?" if stopped is None else "%.0f" % stopped,
                  state.get("MainPID"), held, state.get("MemoryCurrent")))
    sh(HEAD, "rm -f %s && systemctl daemon-reload && systemctl reset-failed %s && systemctl start %s"
       % (DROPIN, UNIT, UNIT), check=True, timeout=300)
    start = time.monotonic()
    seconds = wait(lambda: serving(key), limit)
    return (None if seconds is None else time.monotonic() - start), detail + "; after the fix, a completion answered"


HEADER = ["| fault | time to recovery | measured | what was checked |", "|---|---|---|---|"]


def record(rows, path):
    """Write the faults section of bench/results.md (make bench keeps it): the rows of this run
    replace those of the same faults; rows of faults not run this time stay, with their date."""
    text = open(path).read() if os.path.exists(path) else ""
    kept, after = {}, ""
    if SECTION in text:
        old = text[text.index(SECTION):]
        # the sections after this one stay where they are
        following = re.search(r"(?m)^## ", old[len(SECTION):])
        if following:
            after = old[len(SECTION) + following.start():]
            old = old[:len(SECTION) + following.start()]
        # Rows written before the table had its date column take the section's date.
        dated = re.search(r"on (\d{4}-\d\d-\d\d)", old)
        for line in old.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not line.startswith("| ") or cells[0] not in FAULTS:
                continue
            if len(cells) == 3 and dated:
                cells.insert(2, dated.group(1))
            if len(cells) == 4:
                kept[cells[0]] = "| %s |" % " | ".join(cells)
        text = text[:text.index(SECTION)]
    for line in rows:
        kept[line.strip().strip("|").split("|")[0].strip()] = line
    section = [SECTION, "", "Measured by `make chaos` (tools/chaos.py) on %d cores, on the fleet `make demo` left "
               "running; `make chaos FAULTS=...` measures some again and keeps the other rows." % (os.cpu_count() or 0),
               ""] + HEADER + [kept[fault] for fault in FAULTS if fault in kept]
    with open(path + ".tmp", "w") as handle:
        handle.write(text.rstrip("\n") + ("\n\n" if text.strip() else "") + "\n".join(section) + "\n"
                     + ("\n" + after.rstrip("\n") + "\n" if after else ""))
    os.replace(path + ".tmp", path)


def name_fabric_port_at_boot(host=FOLLOWER):
    """Install the sim stand-in that names HOST's fabric port at boot (see RENAME_SCRIPT)."""
    networks = json.loads(subprocess.run(["docker", "inspect", "-f", "{{json .NetworkSettings.Networks}}", host],
                                         capture_output=True, text=True, check=True).stdout)
    macs = [n["MacAddress"] for name, n in networks.items() if name != "bridge"]
    sh(host, "cat > /usr/local/sbin/sparkfleet-sim-fabric-name && chmod 0755 /usr/local/sbin/sparkfleet-sim-fabric-name",
       check=True, stdin=RENAME_SCRIPT % {"name": FABRIC_IFNAME, "mac": macs[0]})
    sh(host, "cat > /etc/systemd/system/sparkfleet-sim-fabric-name.service && systemctl daemon-reload && "
             "systemctl enable sparkfleet-sim-fabric-name.service", check=True, stdin=RENAME_UNIT)


def journal_count(host, unit, since, words):
    """Lines of UNIT's journal since the epoch second SINCE that hold WORDS."""
    out = sh(host, "journalctl -u %s --since @%s --no-pager -o cat | grep -cF %s; true"
             % (unit, since, json.dumps(words))).stdout.strip()
    return int(out or 0)


def fault_member_away(key, limit, problems):
    """The follower away longer than the head's start-limit window; the head serves again by itself."""
    timer = show(HEAD, UNIT, "OnFailure").get("OnFailure", "").split()
    if len(timer) != 1 or not timer[0].endswith(".timer"):
        problems.append("member-away: %s has no OnFailure= retry timer (%r)" % (UNIT, timer))
        return None, "no retry timer"
    timer = timer[0]
    timer_dropin = "/run/systemd/system/%s.d/zz-chaos-member-away.conf" % timer
    name_fabric_port_at_boot()
    # TimeoutStopSec: a Spark's vLLM exits by itself when it gives up; the sim's is stopped, and its mp
    # executor's shutdown without the follower waits out the unit's stop timeout.
    sh(HEAD, "mkdir -p %s %s && printf '[Unit]\\nStartLimitIntervalSec=%d\\nStartLimitBurst=%d\\n[Service]\\n"
             "TimeoutStartSec=%d\\nRuntimeMaxSec=%d\\nTimeoutStopSec=5\\n' > %s && "
             "printf '[Timer]\\nOnActiveSec=\\nOnActiveSec=%d\\n' > %s && systemctl daemon-reload"
       % (os.path.dirname(AWAY_DROPIN), os.path.dirname(timer_dropin), AWAY_WINDOW, AWAY_BURST, AWAY_WAIT, AWAY_WAIT,
          AWAY_DROPIN, AWAY_RETRY, timer_dropin), check=True)
    since = sh(HEAD, "date +%s", check=True).stdout.strip()
    subprocess.run(["docker", "stop", FOLLOWER], check=True, capture_output=True, timeout=300)
    away_start = time.monotonic()
    limited = wait(lambda: show(HEAD, UNIT, "ActiveState")["ActiveState"] == "failed", AWAY_FOR, step=3)
    time.sleep(max(0.0, AWAY_FOR - (time.monotonic() - away_start)))
    away = time.monotonic() - away_start
    # Every start systemd began: one whose ExecStartPre waited out the member's page-cache drop never says "Started".
    starts = journal_count(HEAD, UNIT, since, "Starting ")
    retried = journal_count(HEAD, timer.replace(".timer", ".service"), since, "Finished ")
    if limited is None:
        problems.append("member-away: the head never reached its start limit in %.0f s" % AWAY_FOR)
    if retried < 1:
        problems.append("member-away: the retry timer never started the head again while the member was away")
    # One start per TimeoutStartSec or RuntimeMaxSec (+ RestartSec) at most: a storm would start it far more often.
    most = int(away // AWAY_WAIT) + 2
    if starts > most:
        problems.append("member-away: %d starts in %.0f s away (at most %d expected)" % (starts, away, most))
    sh(HEAD, "rm -f %s %s && systemctl daemon-reload" % (AWAY_DROPIN, timer_dropin), check=True)
    subprocess.run(["docker", "start", FOLLOWER], check=True, capture_output=True, timeout=300)
    start = time.monotonic()
    seconds = wait(lambda: serving(key), limit, step=3)
    detail = ("%s stopped %.0f s (window %d s, burst %d, a start gives up after %d s, retry after %d s: runtime "
              "drop-ins); the head hit its start limit after %s s, %d start(s), %d by its retry timer; after the "
              "member's start a completion answered" % (FOLLOWER, away, AWAY_WINDOW, AWAY_BURST, AWAY_WAIT, AWAY_RETRY,
                                                        "?" if limited is None else "%.0f" % limited, starts, retried))
    return (None if seconds is None else time.monotonic() - start), detail


def fault_host_restart(key, limit, problems):
    """docker restart of the follower host: its units come back on their own, in order."""
    name_fabric_port_at_boot()
    subprocess.run(["docker", "restart", FOLLOWER], check=True, capture_output=True, timeout=300)
    start = time.monotonic()
    seconds = wait(lambda: serving(key) and ray_members_alive() == 2 and ssh(FOLLOWER, "true").returncode == 0, limit,
                   step=3)
    if seconds is None:
        login = ssh(FOLLOWER, "true")
        return None, "docker restart %s; then an SSH login %s" % (
            FOLLOWER, "worked" if login.returncode == 0 else "failed: %s" % login.stderr.strip()[-200:])
    link = sh(FOLLOWER, "ip -o -4 addr show dev %s; ip -o link show dev %s" % (FABRIC_IFNAME, FABRIC_IFNAME)).stdout
    table = sh(FOLLOWER, "nft list table inet sparkfleet >/dev/null && echo loaded").stdout.strip()
    entered = dict((unit, int(show(FOLLOWER, unit, "ActiveEnterTimestampMonotonic")["ActiveEnterTimestampMonotonic"] or 0))
                   for pair in BOOT_ORDER for unit in pair)
    if "mtu 9000" not in link or " inet " not in link:
        problems.append("host-restart: the fabric port came back without its address or MTU 9000: %r" % link)
    if table != "loaded":
        problems.append("host-restart: the firewall table is not loaded after the restart")
    late = ["%s before %s" % pair for pair in BOOT_ORDER
            if not entered[pair[0]] or not entered[pair[1]] or entered[pair[0]] > entered[pair[1]]]
    if late:
        problems.append("host-restart: out of order at boot: %s (%s)" % ("; ".join(late), entered))
    return time.monotonic() - start, ("docker restart %s; fabric address and MTU 9000 back, firewall table loaded, %s; "
                                      "a completion answered, both Ray members alive, an SSH login to %s worked"
                                      % (FOLLOWER, ", ".join("%s < %s" % (a.replace(".service", ""), b.replace(".service", ""))
                                                             for a, b in BOOT_ORDER), FOLLOWER))


def playbook(name, *args):
    """ansible-playbook ARGS from the repository (as make demo runs it); its output goes to
    build/chaos/NAME.log. Returns (rc, seconds)."""
    os.makedirs(LOGS, exist_ok=True)
    start = time.monotonic()
    with open(os.path.join(LOGS, name + ".log"), "w") as log:
        proc = subprocess.run(["ansible-playbook"] + list(args), cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                              env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")), check=False)
    return proc.returncode, time.monotonic() - start


def controller_key(inventory, host, model):
    """The API key vllm_service copied to the controller for HOST's MODEL (~/.sparkfleet/<inventory>/)."""
    with open(os.path.expanduser("~/.sparkfleet/%s/%s-%s.key" % (os.path.basename(inventory), host, model))) as handle:
        return handle.read().strip()


def rolled_inventory(workdir):
    """A copy of inventories/sim-independent (same directory name, so the same controller key
    directory) whose spark-2 model carries the roll's changed setting."""
    copy = os.path.join(workdir, os.path.basename(INDEPENDENT))
    shutil.copytree(INDEPENDENT, copy)  # links resolved: the copy stands alone
    path = os.path.join(copy, "host_vars", FOLLOWER + ".yml")
    with open(path) as handle:
        host_vars = yaml.safe_load(handle)
    host_vars["sparkfleet_models"][0][ROLL_SETTING[0]] = ROLL_SETTING[1]
    with open(path, "w") as handle:
        yaml.safe_dump(host_vars, handle, explicit_start=True, sort_keys=False)
    return copy


def fault_rolling_update(problems):
    """Roll spark-2 of a fleet of independent hosts while spark-1 serves a bounded load."""
    units = dict((host, "%s%s.service" % (VLLM_UNIT_PREFIX, model)) for host, model in INDEPENDENT_MODELS.items())
    rc, seconds = playbook("independent-converge", "site.yml", "-i", INDEPENDENT)
    if rc != 0:
        problems.append("rolling-update: site.yml on inventories/sim-independent failed (rc %d, build/chaos/"
                        "independent-converge.log)" % rc)
        return None, "the independent layout did not converge"
    print("chaos: fleet switched to inventories/sim-independent in %.0f s" % seconds, file=sys.stderr, flush=True)
    key = controller_key(INDEPENDENT, HEAD, INDEPENDENT_MODELS[HEAD])
    before = dict((host, show(host, unit, "MainPID", "NRestarts")) for host, unit in units.items())
    sh(HEAD, "rm -f %s" % LOAD_STOP, check=True)
    load = subprocess.Popen(["docker", "exec", "-i", "-e", "SPARKFLEET_KEY", HEAD, "python3", "-",
                             INDEPENDENT_MODELS[HEAD], LOAD_STOP, str(LOAD_PAUSE_S)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, SPARKFLEET_KEY=key))
    load.stdin.write(LOAD)
    load.stdin.close()
    time.sleep(10)  # a few requests answered before the roll starts
    workdir = tempfile.mkdtemp(prefix="sparkfleet-chaos-")
    try:
        roll_start = time.time()
        rc, roll_s = playbook("rolling-update", "playbooks/rolling_update.yml", "-i", rolled_inventory(workdir),
                              "--limit", FOLLOWER)
        roll_end = time.time()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    time.sleep(10)
    sh(HEAD, "touch %s" % LOAD_STOP, check=True)
    out, err = load.stdout.read(), load.stderr.read()  # the load prints once, at its end
    load.wait(timeout=300)
    try:
        seen = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        seen = {"ok": 0, "failed": -1, "errors": [err.strip()[-300:]], "first_start": None, "last_end": None}
    after = dict((host, show(host, unit, "MainPID", "NRestarts", "ExecStart")) for host, unit in units.items())
    if rc != 0:
        problems.append("rolling-update: rolling_update.yml --limit %s failed (rc %d, build/chaos/rolling-update.log)"
                        % (FOLLOWER, rc))
    if seen["failed"] != 0 or seen["ok"] < 3:
        problems.append("rolling-update: load on %s: %s ok, %s failed: %s" % (HEAD, seen["ok"], seen["failed"],
                                                                              seen["errors"]))
    if not (seen["first_start"] and seen["first_start"] < roll_start and (seen["last_end"] or 0) > roll_end):
        problems.append("rolling-update: the load did not span the roll (%s .. %s vs %.0f .. %.0f)"
                        % (seen["first_start"], seen["last_end"], roll_start, roll_end))
    if (after[HEAD]["MainPID"], after[HEAD]["NRestarts"]) != (before[HEAD]["MainPID"], before[HEAD]["NRestarts"]):
        problems.append("rolling-update: %s on %s was restarted by the roll of %s (%s -> %s)"
                        % (units[HEAD], HEAD, FOLLOWER, before[HEAD], after[HEAD]))
    if after[FOLLOWER]["MainPID"] in ("0", before[FOLLOWER]["MainPID"]) or ROLL_SETTING[2] not in after[FOLLOWER]["ExecStart"]:
        problems.append("rolling-update: %s on %s was not restarted with %s (MainPID %s -> %s)"
                        % (units[FOLLOWER], FOLLOWER, ROLL_SETTING[2], before[FOLLOWER]["MainPID"],
                           after[FOLLOWER]["MainPID"]))
    detail = ("inventories/sim-independent; rolling_update.yml --limit %s (%s of %s: %s) while %s's %s took one "
              "request at a time over loopback (%.0f s apart): %d answered, %d failed, slowest %.1f s; %s's vLLM kept MainPID %s "
              "with no restart, %s's restarted (MainPID %s -> %s)"
              % (FOLLOWER, ROLL_SETTING[0], INDEPENDENT_MODELS[FOLLOWER], ROLL_SETTING[1], HEAD,
                 INDEPENDENT_MODELS[HEAD], LOAD_PAUSE_S, seen["ok"], seen["failed"], seen.get("slowest_s", 0.0), HEAD,
                 after[HEAD]["MainPID"], FOLLOWER, before[FOLLOWER]["MainPID"], after[FOLLOWER]["MainPID"]))
    rc_back, back_s = playbook("demo-restore", "site.yml", "-i", DEMO_INVENTORY)
    if rc_back != 0:
        problems.append("rolling-update: putting back inventories/sim failed (rc %d, build/chaos/demo-restore.log)"
                        % rc_back)
    else:
        detail += "; then inventories/sim put back in %.0f s" % back_s
    return (roll_s if rc == 0 else None), detail


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--limit", type=float, default=600.0, help="seconds each fault may take to recover")
    parser.add_argument("--results", default=RESULTS, help="markdown file whose '%s' section is replaced" % SECTION)
    args = parser.parse_args(argv)
    faults = [f for f in args.faults.split(",") if f]
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        parser.error("unknown fault(s) %s; known: %s" % (", ".join(unknown), ", ".join(FAULTS)))
    try:
        key = controller_key(DEMO_INVENTORY, HEAD, MODEL)
    except OSError as exc:
        raise SystemExit("chaos: no API key (%s): run make demo first (it leaves the fleet running)" % exc)
    if not serving(key):
        raise SystemExit("chaos: the fleet does not serve %s before any fault: run make demo first" % MODEL)

    problems = []
    rows = []
    today = time.strftime("%Y-%m-%d", time.gmtime())
    print("\n".join(HEADER))
    for fault in faults:
        clear_counters()
        if fault == "head-kill":
            seconds, what = fault_kill(HEAD, key, args.limit)
        elif fault == "follower-kill":
            seconds, what = fault_kill(FOLLOWER, key, args.limit)
        elif fault == "ray-head-restart":
            seconds, what = fault_ray_head(key, args.limit)
        elif fault == "crash-loop":
            seconds, what = fault_crash_loop(key, args.limit, problems)
        elif fault == "memory-pressure":
            seconds, what = chaos_memory.fault_memory_pressure(types.SimpleNamespace(
                sh=sh, ssh=ssh, show=show, wait=wait, serving=serving, host=HEAD, unit=UNIT, ray_head=RAY_HEAD),
                key, args.limit, problems)
        elif fault == "host-restart":
            seconds, what = fault_host_restart(key, args.limit, problems)
        elif fault == "member-away":
            seconds, what = fault_member_away(key, args.limit, problems)
        elif fault == "page-cache-drop":
            seconds, what = chaos_page_cache.fault_page_cache_drop(types.SimpleNamespace(
                sh=sh, show=show, wait=wait, serving=serving, head=HEAD, follower=FOLLOWER, unit=UNIT,
                ray_worker=RAY_WORKER, state_file=fleet_default("page_cache_state_file"),
                weights_dir=os.path.join(fleet_default("model_store_dir"), MODEL)), key, args.limit, problems)
        elif fault == "os-update":
            seconds, what = chaos_os_update.fault_os_update(types.SimpleNamespace(
                sh=sh, show=show, playbook=playbook, controller_key=controller_key,
                name_fabric_port_at_boot=name_fabric_port_at_boot, repo=REPO, head=HEAD, follower=FOLLOWER,
                independent=INDEPENDENT, demo_inventory=DEMO_INVENTORY, models=INDEPENDENT_MODELS,
                unit_prefix=VLLM_UNIT_PREFIX, load=LOAD, load_stop=LOAD_STOP, load_pause=LOAD_PAUSE_S), problems)
        else:
            seconds, what = fault_rolling_update(problems)
        if seconds is None:
            problems.append("%s: not recovered within %.0f s" % (fault, args.limit))
        rows.append("| %s | %s | %s | %s |" % (fault, "not recovered" if seconds is None else "%.0f s" % seconds,
                                               today, what))
        print(rows[-1], flush=True)
    record(rows, args.results)
    for problem in problems:
        print("chaos: %s" % problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
