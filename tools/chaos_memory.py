#!/usr/bin/env python3
"""The ``memory-pressure`` fault of ``make chaos`` (tools/chaos.py): unified memory runs out on the head, and the
memory guard (sparkfleet.gb10.memory_guard: earlyoom, rule memory_guard) must act before the host wedges.

On a Spark the memory that runs out is vLLM's own: CUDA's allocations on unified memory, which are not in the
process's RSS (so not in its oom_score) and are freed when the process dies. The sim stands that in with an eater:
a process in a transient unit whose growth is bounded by a cgroup limit (MemoryMax, checked in the unit's memory
cgroup before it eats), that takes memory step by step and frees it when any process of the head's vLLM unit dies.

A container's /proc/meminfo is the test machine's, and eating that would risk the machine: earlyoom reads a view of a
simulated Spark instead (SIM STAND-IN, as LXCFS gives containers): a runtime drop-in bind-mounts a file over
/proc/meminfo for earlyoom's unit alone, written fifty times a second with MemTotal SPARK_KIB and MemAvailable
AVAILABLE_KIB less what the eater holds (its cgroup's usage). The guard itself (the binary, its arguments from the
role, its choice of victim among the host's real processes, the signal) is the real one.

Passes when: earlyoom sent its signal to a process of the vLLM unit (a name its prefer pattern matches), to nothing
else; the eater was not killed and stayed under its limit; systemd restarted the vLLM unit (new MainPID) and a
completion answered (the time to recovery, from the eater's start); the host took a new SSH login (as users reach
it: ctx.ssh, tools/chaos.py's ssh()) and answered its command every HEARTBEAT_S the whole time (the slowest answer is
reported); journald, dbus, networkd, logind and the Ray head kept their MainPID; and the running guard's own arguments
avoid sshd and sshd-session and never prefer them. The drop-in, the view and both transient units are removed after,
and earlyoom is restarted on the host's real /proc/meminfo.
"""

from __future__ import annotations

import re
import time

GUARD = "earlyoom.service"
CHAOS_DIR = "/run/sparkfleet-chaos"
VIEW = CHAOS_DIR + "/meminfo"
VIEW_UNIT = "sparkfleet-chaos-meminfo-view.service"
EATER_UNIT = "sparkfleet-chaos-memory-eater.service"
DROPIN = "/run/systemd/system/%s.d/zz-chaos-meminfo-view.conf" % GUARD
# The simulated Spark (KiB): 4 GiB, 1 GiB of it available before the eater starts (the fleet holds the rest).
SPARK_KIB = 4 * 1024 * 1024
AVAILABLE_KIB = 1024 * 1024
# The eater: 16 MiB every 0.1 s, at most 1152 MiB (more than the simulated Spark has left), under a 1408 MiB limit.
EAT_STEP_MIB, EAT_MOST_MIB, EAT_PACE_S, EAT_LIMIT_MIB = 16, 1152, 0.1, 1408
HEARTBEAT_S = 0.5
# Units whose process the guard must leave alone (systemd's and the fabric's), with the Ray head.
BYSTANDERS = ("systemd-journald.service", "dbus.service", "systemd-networkd.service", "systemd-logind.service")
# Names of sshd's processes (OpenSSH before 9.8, and its per-session process from 9.8 on).
SSHD_NAMES = ("sshd", "sshd-session")

VIEW_FORMAT = ("MemTotal:       %12d kB\nMemFree:        %12d kB\nMemAvailable:   %12d kB\n"
               "SwapTotal:      %12d kB\nSwapFree:       %12d kB\n")

# SIM STAND-IN: the simulated Spark's /proc/meminfo for earlyoom (see the module's docstring). Fixed width, written
# in place (earlyoom opens the file once and rewinds it), so a read never sees a half-written file.
VIEW_SCRIPT = r"""
import os, sys, time
out, usage_file, total, available = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
fmt = %r
fd = os.open(out, os.O_RDWR | os.O_CREAT, 0o644)
while True:
    try:
        with open(usage_file) as handle:
            eaten = int(handle.read()) // 1024
    except (OSError, ValueError):
        eaten = 0
    left = max(0, available - eaten)
    os.pwrite(fd, (fmt %% (total, left, left, 0, 0)).encode(), 0)
    time.sleep(0.02)
""" % VIEW_FORMAT

# The eater: touches STEP MiB every PACE s up to MOST MiB; frees everything (exits 0) once a watched process is gone,
# as the driver frees a dead process's CUDA memory; gives up after 180 s.
EATER_SCRIPT = r"""
import os, sys, time
step, most, pace = int(sys.argv[1]) << 20, int(sys.argv[2]) << 20, float(sys.argv[3])
watched = [pid for pid in sys.argv[4].split(",") if pid]
def alive(pid):
    try:
        with open("/proc/%s/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False
held, deadline, next_step = [], time.time() + 180, 0.0
while time.time() < deadline:
    # Checked every 10 ms: the driver frees a process's CUDA memory as the process dies, before earlyoom sees it gone.
    gone = [pid for pid in watched if not alive(pid)]
    if gone:
        held = []
        print("process(es) %s gone: their memory is freed" % ",".join(gone), flush=True)
        sys.exit(0)
    if len(held) * step < most and time.time() >= next_step:
        held.append(bytearray(b"\x01") * step)
        next_step = time.time() + pace
    time.sleep(0.01)
print("no watched process died in 180 s", flush=True)
sys.exit(4)
"""

# earlyoom 1.7's line for each signal it sends (kill.c), and what it says after one.
SENT_RE = re.compile(r'sending (SIG[A-Z]+) to process (\d+) uid (-?\d+) "([^"]*)": badness (-?\d+), VmRSS (\d+) MiB')
AFTER_RE = re.compile(r"(escalating to SIGKILL after [0-9.]+ seconds|process exited after [0-9.]+ seconds)")


def view_text(total_kib, available_kib):
    """The simulated /proc/meminfo the view writes (what earlyoom 1.7 parses: MemTotal, MemAvailable, SwapTotal,
    SwapFree)."""
    left = max(0, available_kib)
    return VIEW_FORMAT % (total_kib, left, left, 0, 0)


def parse_sent(journal):
    """[(epoch or None, signal, pid, name, badness, rss_mib)] of earlyoom's journal text (``-o short-unix`` or
    ``-o cat``)."""
    found = []
    for line in journal.splitlines():
        match = SENT_RE.search(line)
        if not match:
            continue
        head = line.split(" ", 1)[0]
        try:
            stamp = float(head)
        except ValueError:
            stamp = None
        found.append((stamp, match.group(1), int(match.group(2)), match.group(4), int(match.group(5)),
                      int(match.group(6))))
    return found


def guard_patterns(argv):
    """(prefer, avoid) regular expressions of an earlyoom argv (None where not given)."""
    patterns = {"--prefer": None, "--avoid": None}
    for index, arg in enumerate(argv[:-1]):
        if arg in patterns:
            patterns[arg] = argv[index + 1]
    return patterns["--prefer"], patterns["--avoid"]


def never_picks(names, prefer, avoid):
    """The names of ``names`` earlyoom might pick first: those its avoid pattern misses or its prefer pattern
    matches. Python's re reads the POSIX extended subset the rule book's patterns use."""
    risky = []
    for name in names:
        name = name[:15]  # /proc/PID/comm holds at most 15 characters
        if not (avoid and re.search(avoid, name)) or (prefer and re.search(prefer, name)):
            risky.append(name)
    return risky


def _pids_of(sh, host, unit):
    """Every process of a unit (its cgroup in any hierarchy names it), as text."""
    out = sh(host, "grep -l '/%s$' /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3 | sort -n" % re.escape(unit)).stdout
    return [pid for pid in out.split() if pid.isdigit()]


def fault_memory_pressure(ctx, key, limit, problems):
    """Run the fault on ctx.host (ctx: sh, ssh, show, wait, serving, host, unit, ray_head). Returns (seconds or None,
    what was checked)."""
    sh, show, host, unit = ctx.sh, ctx.show, ctx.host, ctx.unit
    if show(host, GUARD, "ActiveState").get("ActiveState") != "active":
        problems.append("memory-pressure: %s is not active on %s (sparkfleet.gb10.memory_guard not applied?)"
                        % (GUARD, host))
        return None, "no memory guard"
    argv = sh(host, "tr '\\0' '\\n' < /proc/$(systemctl show -p MainPID --value %s)/cmdline" % GUARD).stdout.splitlines()
    prefer, avoid = guard_patterns(argv)
    risky = never_picks(SSHD_NAMES, prefer, avoid)
    if risky:
        problems.append("memory-pressure: the running guard (%s) does not avoid %s" % (" ".join(argv), risky))
    watched = _pids_of(sh, host, unit)
    before = show(host, unit, "MainPID", "NRestarts")
    bystanders = dict((name, show(host, name, "MainPID").get("MainPID")) for name in BYSTANDERS + (ctx.ray_head,))
    detail = "no eater"
    try:
        # The view first (earlyoom needs the file at its start), then earlyoom on it, then the bounded eater.
        sh(host, "mkdir -p %s && cat > %s/view.py" % (CHAOS_DIR, CHAOS_DIR), check=True, stdin=VIEW_SCRIPT)
        sh(host, "cat > %s/eater.py" % CHAOS_DIR, check=True, stdin=EATER_SCRIPT)
        # The eater's memory cgroup (v1 under the sim's hybrid hierarchy, v2 where unified): known before it starts.
        group = sh(host, "systemctl show -p ControlGroup --value system.slice").stdout.strip() + "/" + EATER_UNIT
        usage = sh(host, "if [ -d /sys/fs/cgroup/memory ]; then echo /sys/fs/cgroup/memory%s/memory.usage_in_bytes; "
                         "else echo /sys/fs/cgroup%s/memory.current; fi" % (group, group)).stdout.strip()
        sh(host, "systemd-run --quiet --unit %s --property Type=simple /usr/bin/python3 %s/view.py %s %s %d %d"
           % (VIEW_UNIT, CHAOS_DIR, VIEW, usage, SPARK_KIB, AVAILABLE_KIB), check=True)
        if ctx.wait(lambda: sh(host, "test -s %s" % VIEW).returncode == 0, 10, step=0.5) is None:
            problems.append("memory-pressure: the meminfo view never appeared")
            return None, "no meminfo view"
        sh(host, "mkdir -p %s && printf '[Service]\\nBindReadOnlyPaths=%s:/proc/meminfo\\n' > %s && "
                 "systemctl daemon-reload && systemctl restart %s" % (DROPIN.rsplit("/", 1)[0], VIEW, DROPIN, GUARD),
           check=True)
        seen_total = ctx.wait(lambda: "mem total: %d MiB" % (SPARK_KIB // 1024) in sh(
            host, "journalctl -u %s -n 20 -o cat --no-pager" % GUARD).stdout, 20, step=0.5)
        if seen_total is None:
            problems.append("memory-pressure: earlyoom did not read the simulated Spark's meminfo")
            return None, "earlyoom not on the view"
        since = sh(host, "date +%s.%N", check=True).stdout.strip()
        sh(host, "systemd-run --quiet --unit %s --property MemoryMax=%dM --property Type=simple "
                 "/usr/bin/python3 %s/eater.py %d %d %s %s"
           % (EATER_UNIT, EAT_LIMIT_MIB, CHAOS_DIR, EAT_STEP_MIB, EAT_MOST_MIB, EAT_PACE_S, ",".join(watched)),
           check=True)
        start = time.monotonic()
        limit_file = usage.replace("memory.usage_in_bytes", "memory.limit_in_bytes").replace("memory.current",
                                                                                             "memory.max")
        bound = sh(host, "cat %s" % limit_file).stdout.strip()
        if bound != str(EAT_LIMIT_MIB << 20):
            sh(host, "systemctl stop %s" % EATER_UNIT)
            problems.append("memory-pressure: the eater's cgroup limit is %r, not %d MiB: stopped before it ate"
                            % (bound, EAT_LIMIT_MIB))
            return None, "eater unbounded"
        # The host must answer all along, over SSH as users reach it: a new login and one command every HEARTBEAT_S
        # until the eater is done (ssh's own failures are rc 255; then docker exec asks how the eater is).
        slowest, answers, missed = 0.0, 0, []
        while time.monotonic() - start < 120:
            asked = time.monotonic()
            beat = ctx.ssh(host, "systemctl show -p ActiveState --value %s" % EATER_UNIT, timeout=30)
            slowest = max(slowest, time.monotonic() - asked)
            if beat.returncode == 255:
                missed.append("%.1f s: %s" % (asked - start, beat.stderr.strip()[-200:]))
                beat = sh(host, "systemctl show -p ActiveState --value %s" % EATER_UNIT, timeout=30)
            else:
                answers += 1
            state = beat.stdout.strip()
            if state not in ("active", "activating"):
                break
            time.sleep(HEARTBEAT_S)
        if missed:
            problems.append("memory-pressure: %d SSH login(s) to %s failed during the pressure: %s"
                            % (len(missed), host, "; ".join(missed[:3])))
        eater = show(host, EATER_UNIT, "Result", "ExecMainStatus", "ExecMainCode")
        journal = sh(host, "journalctl -u %s --since @%s -o short-unix --no-pager" % (GUARD, since.split(".")[0])).stdout
        sent = [s for s in parse_sent(journal) if s[0] is None or s[0] >= float(since)]
        freed = sh(host, "journalctl -u %s --since @%s -o cat --no-pager | tail -n 3" % (EATER_UNIT, since.split(".")[0])
                   ).stdout.strip().splitlines()
        outsiders = [s for s in sent if str(s[2]) not in watched]
        if not sent:
            problems.append("memory-pressure: earlyoom sent no signal (eater: %s)" % eater)
        if outsiders:
            problems.append("memory-pressure: earlyoom signalled processes outside %s: %s" % (unit, outsiders))
        if [s for s in sent if not (prefer and re.search(prefer, s[3]))]:
            problems.append("memory-pressure: a victim's name is not one the prefer pattern %r matches: %s"
                            % (prefer, sent))
        if eater.get("Result") != "success" or eater.get("ExecMainStatus") != "0":
            problems.append("memory-pressure: the eater did not give its memory back by itself (%s; %s)"
                            % (eater, freed))
        acted = ("%.1f" % (sent[0][0] - float(since))) if sent and sent[0][0] else "?"
        then = [m.group(1) for m in map(AFTER_RE.search, journal.splitlines()) if m]
        detail = ("head: earlyoom (-m %s) on a simulated %d MiB Spark (%d MiB available); an eater under MemoryMax "
                  "%d MiB took %d MiB per %.1f s; earlyoom acted after %s s: %s%s; the eater then gave its memory "
                  "back; the host answered %d new SSH logins, slowest %.1f s; sshd and sshd-session avoided by the running "
                  "guard's pattern" % (
                      argv[argv.index("-m") + 1] if "-m" in argv else "?", SPARK_KIB // 1024, AVAILABLE_KIB // 1024,
                      EAT_LIMIT_MIB, EAT_STEP_MIB, EAT_PACE_S, acted,
                      ", ".join("%s to %s %s (badness %d, %d MiB)" % (s[1], s[3], s[2], s[4], s[5]) for s in sent)
                      or "nothing", "".join(", " + line for line in then), answers, slowest))
    finally:
        sh(host, "systemctl stop %s %s 2>/dev/null; systemctl reset-failed %s %s 2>/dev/null; rm -f %s && "
                 "systemctl daemon-reload && systemctl restart %s; rm -rf %s; true"
           % (EATER_UNIT, VIEW_UNIT, EATER_UNIT, VIEW_UNIT, DROPIN, GUARD, CHAOS_DIR), timeout=120)
    seconds = ctx.wait(lambda: ctx.serving(key), limit)
    after = show(host, unit, "MainPID", "NRestarts")
    if after.get("MainPID") in ("0", before.get("MainPID")):
        problems.append("memory-pressure: %s was not restarted by systemd (%s -> %s)" % (unit, before, after))
    moved = dict((name, pid) for name, pid in bystanders.items()
                 if show(host, name, "MainPID").get("MainPID") != pid)
    if moved:
        problems.append("memory-pressure: bystanders lost their process: %s (were %s)" % (sorted(moved), bystanders))
    real = sh(host, "journalctl -u %s -n 20 -o cat --no-pager | grep 'mem total' | tail -n 1" % GUARD).stdout.strip()
    detail += ("; systemd restarted %s (MainPID %s -> %s, NRestarts %s -> %s) and a completion answered; %s kept "
               "their MainPID; earlyoom back on the host's meminfo (%s)" % (
                   unit, before.get("MainPID"), after.get("MainPID"), before.get("NRestarts"), after.get("NRestarts"),
                   ", ".join(n.replace(".service", "") for n in bystanders), real))
    return (None if seconds is None else time.monotonic() - start), detail
