"""The ``page-cache-drop`` fault of ``make chaos`` (tools/chaos.py): the follower's page cache is filled, then the
head's vLLM unit is started by two paths that are not site.yml, and each time the follower must have dropped its page
cache, asked by the head's start, before the model loaded (rule members_drop_page_cache).

1. ``restart``: a person restarts the head's unit by hand (``systemctl restart``).
2. ``retry-timer``: the head's unit fails for good (a runtime drop-in makes its start fail after the drops, with
   ``StartLimitBurst=1``), so its ``OnFailure=`` retry timer is armed (with an hour to wait, so it cannot fire early);
   the hold is lifted, the cache filled again, and the timer re-armed to fire a second later: its service starts the
   unit, as it does 900 s after a real failure.

A Spark's follower (ray executor) has no vLLM unit of its own: only the head's request drops its page cache before it
loads its share in the Ray worker. The sim's follower is an mp rank whose own unit drops too, so during the fault a
runtime drop-in on the follower's unit empties its ``ExecStartPre=``: the follower stands as a ray follower does, and
only the head's request can drop its cache.

The page cache is filled where the sim can drop it: a container cannot write /proc/sys/vm/drop_caches, but the sim's
drop command (tests/sim/group_vars/all/vllm_cpu.yml) drops the cached pages of every file under the model store and
under PAGE_CACHE_DIR (posix_fadvise through dd's nocache). The fault writes BALLAST_MIB there and reads it and the
model's weights back; ``fincore`` says how many bytes of the ballast are cached.

Passes when, for each path: the ballast was cached before the start; the follower's drop record (the fleet default
page_cache_state_file) has a drop asked by the head, for the head's unit, that finished after the cache was filled and
before the head's vLLM process started (``ExecMainStartTimestampMonotonic``; nothing loads before it: the rendezvous,
and on a Spark the placement group, come from that process); on the timer path, after the timer's service started;
the ballast is no longer cached; the follower recorded no drop of its own meanwhile and its Ray worker kept its
process (either would drop the ballast too); a completion answers again. The clocks compared are CLOCK_MONOTONIC,
which the containers share with the machine. The time is the two starts' until a completion answered.
"""

from __future__ import annotations

import json
import os
import time

# Where the fault fills the follower's page cache (the sim's drop command drops this directory's pages: a unit test
# holds the two together), and how much.
PAGE_CACHE_DIR = "/var/cache/sparkfleet-sim/page-cache"
BALLAST = PAGE_CACHE_DIR + "/ballast"
BALLAST_MIB = 64
HOLD = "/run/sparkfleet-chaos-page-cache.hold"
DROPIN = "zz-chaos-page-cache.conf"
# The follower's own drop off during the fault (an empty ExecStartPre= clears the list).
NO_OWN_DROP = "[Service]\nExecStartPre=\n"
# The head's start fails after its drops while the hold file exists; one start in the window, then failed for good.
HEAD_HOLD = "[Unit]\nStartLimitBurst=1\n[Service]\nExecStartPre=/bin/sh -c \"test ! -e %s\"\n" % HOLD
TIMER_WAIT = "[Timer]\nOnActiveSec=\nOnActiveSec=%d\n"


def dropin_path(unit):
    return "/run/systemd/system/%s.d/%s" % (unit, DROPIN)


def write_dropin(c, host, unit, text):
    path = dropin_path(unit)
    c.sh(host, "mkdir -p %s && cat > %s && systemctl daemon-reload" % (os.path.dirname(path), path), check=True,
         stdin=text)


def remove_dropin(c, host, unit):
    c.sh(host, "rm -f %s && systemctl daemon-reload" % dropin_path(unit), check=True)


def monotonic(c, host):
    """CLOCK_MONOTONIC on HOST, in seconds (the clock systemd's *TimestampMonotonic and the drop record use)."""
    return float(c.sh(host, None, script="import time; print(time.monotonic())", check=True).stdout.strip())


def timestamp(c, host, unit, prop):
    """A unit's ``<prop>TimestampMonotonic`` in seconds (0.0 when it never happened)."""
    value = c.show(host, unit, prop + "TimestampMonotonic").get(prop + "TimestampMonotonic") or "0"
    return int(value) / 1e6


def cached_bytes(fincore_out):
    """The bytes ``fincore --bytes --noheadings --output RES FILE...`` says are in the page cache."""
    return sum(int(line.split()[0]) for line in fincore_out.splitlines() if line.split() and line.split()[0].isdigit())


def ballast_cached(c, host):
    out = c.sh(host, "fincore --bytes --noheadings --output RES %s" % BALLAST, check=True).stdout
    return cached_bytes(out)


def fill(c, host, weights_dir):
    """Fills HOST's page cache with the ballast and the model's weights; returns the ballast's cached bytes."""
    c.sh(host, "mkdir -p %s && { test -s %s || dd if=/dev/urandom of=%s bs=1M count=%d status=none; } && sync && "
               "cat %s > /dev/null && find %s -type f -exec cat {} + > /dev/null"
         % (PAGE_CACHE_DIR, BALLAST, BALLAST, BALLAST_MIB, BALLAST, weights_dir), check=True, timeout=300)
    return ballast_cached(c, host)


def drops(c, host, state_file):
    """The follower's drop record, ``recent`` (oldest first)."""
    out = c.sh(host, "cat %s" % state_file).stdout
    try:
        return list((json.loads(out) or {}).get("recent") or [])
    except ValueError:
        return []


def the_asked_drop(entries, unit, after, before):
    """The drop the head asked for ``unit`` that finished after ``after`` and before ``before`` (CLOCK_MONOTONIC
    seconds), the last one if several; None when there is none."""
    found = [e for e in entries if e.get("how") == "asked" and e.get("ok") and e.get("unit") == unit
             and isinstance(e.get("monotonic"), (int, float)) and after < e["monotonic"] < before]
    return found[-1] if found else None


def own_drops(entries, after):
    """Drops the follower made for a start of its own (how local) after ``after``."""
    return [e for e in entries if e.get("how") == "local" and (e.get("monotonic") or 0) > after]


def judge(path, entries, unit, filled, cached_before, cached_after, head_started, started_by=None):
    """The problems of one start path (empty: it passed), and the drop that proves it."""
    problems = []
    if cached_before <= 0:
        problems.append("%s: the follower's ballast was not in its page cache before the start (fincore 0): the "
                        "fault proves nothing" % path)
    lower = max(filled, started_by or 0.0)
    drop = the_asked_drop(entries, unit, lower, head_started)
    if drop is None:
        problems.append("%s: no drop asked by the head for %s on the follower between %s (%.3f) and the head's vLLM "
                        "process (%.3f): %s" % (path, unit, "the timer's service" if started_by else "the fill", lower,
                                                head_started, json.dumps(entries[-4:])))
    if cached_after != 0:
        problems.append("%s: %d bytes of the ballast still cached on the follower after the start" % (path, cached_after))
    mine = own_drops(entries, filled)
    if mine:
        problems.append("%s: the follower dropped for a start of its own (its own drop is off during the fault): %s"
                        % (path, json.dumps(mine)))
    return problems, drop


def fault_page_cache_drop(c, key, limit, problems):
    """``c``: tools/chaos.py's helpers and names (sh, show, wait, serving, head, follower, unit, ray_worker,
    state_file, weights_dir)."""
    unit = c.unit[:-len(".service")] if c.unit.endswith(".service") else c.unit
    timer = (c.show(c.head, c.unit, "OnFailure").get("OnFailure") or "").split()
    if len(timer) != 1 or not timer[0].endswith(".timer"):
        problems.append("page-cache-drop: %s has no OnFailure= retry timer (%r)" % (c.unit, timer))
        return None, "no retry timer"
    timer = timer[0]
    retry_service = timer[:-len(".timer")] + ".service"
    ray_pid = c.show(c.follower, c.ray_worker, "MainPID").get("MainPID")
    seconds = 0.0
    details = []
    write_dropin(c, c.follower, c.unit, NO_OWN_DROP)
    try:
        # 1. a person restarts the head's vLLM unit.
        before = fill(c, c.follower, c.weights_dir)
        filled = monotonic(c, c.follower)
        start = time.monotonic()
        c.sh(c.head, "systemctl restart %s" % c.unit, timeout=900)
        took = c.wait(lambda: c.serving(key), limit)
        if took is None:
            problems.append("page-cache-drop: restart: no completion within %.0f s" % limit)
            return None, "the head's restart did not serve again"
        seconds += time.monotonic() - start
        found, drop = judge("restart", drops(c, c.follower, c.state_file), unit, filled, before,
                            ballast_cached(c, c.follower), timestamp(c, c.head, c.unit, "ExecMainStart"))
        problems += ["page-cache-drop: " + p for p in found]
        if drop:
            details.append("restart by hand: the follower dropped %.1f s before the head's vLLM started (%d MiB "
                           "cached -> 0)" % (timestamp(c, c.head, c.unit, "ExecMainStart") - drop["monotonic"],
                                             before // 2 ** 20))

        # 2. the retry timer starts it after it failed for good.
        c.sh(c.head, "touch %s" % HOLD, check=True)
        write_dropin(c, c.head, c.unit, HEAD_HOLD)
        write_dropin(c, c.head, timer, TIMER_WAIT % 3600)
        c.sh(c.head, "systemctl reset-failed %s; systemctl restart %s; true" % (c.unit, c.unit), timeout=900)
        armed = c.wait(lambda: c.show(c.head, c.unit, "ActiveState")["ActiveState"] == "failed"
                       and c.show(c.head, timer, "ActiveState")["ActiveState"] == "active", limit, step=3)
        if armed is None:
            problems.append("page-cache-drop: retry-timer: the head did not fail for good with its timer armed "
                            "(%s, %s)" % (c.show(c.head, c.unit, "ActiveState", "Result"),
                                          c.show(c.head, timer, "ActiveState")))
            return None, "the retry timer was never armed"
        # Stopped while its wait is cut to a second (a reload of a waiting timer may fire it at once), then started:
        # it fires once, after the fill.
        c.sh(c.head, "systemctl stop %s && rm -f %s" % (timer, HOLD), check=True)
        write_dropin(c, c.head, timer, TIMER_WAIT % 1)
        before = fill(c, c.follower, c.weights_dir)
        filled = monotonic(c, c.follower)
        start = time.monotonic()
        c.sh(c.head, "systemctl start %s" % timer, check=True)
        took = c.wait(lambda: c.serving(key), limit)
        if took is None:
            problems.append("page-cache-drop: retry-timer: no completion within %.0f s" % limit)
            return None, "the retry timer's start did not serve again"
        seconds += time.monotonic() - start
        retried = timestamp(c, c.head, retry_service, "ExecMainStart")
        found, drop = judge("retry-timer", drops(c, c.follower, c.state_file), unit, filled, before,
                            ballast_cached(c, c.follower), timestamp(c, c.head, c.unit, "ExecMainStart"),
                            started_by=retried)
        if retried <= filled:
            found.append("retry-timer: %s did not run after the fill (it last started at %.3f)" % (retry_service, retried))
        problems += ["page-cache-drop: " + p for p in found]
        if drop:
            details.append("started by %s: the follower dropped %.1f s before the head's vLLM started (%d MiB "
                           "cached -> 0)" % (timer, timestamp(c, c.head, c.unit, "ExecMainStart") - drop["monotonic"],
                                             before // 2 ** 20))
        if c.show(c.follower, c.ray_worker, "MainPID").get("MainPID") != ray_pid:
            problems.append("page-cache-drop: the follower's Ray worker restarted during the fault (its own drop "
                            "would have emptied the cache too)")
    finally:
        # The units as site.yml wrote them (the drop-ins live in /run only), the follower's own drop back.
        c.sh(c.head, "rm -f %s" % HOLD)
        c.sh(c.follower, "rm -rf %s" % PAGE_CACHE_DIR)
        for host, one in ((c.follower, c.unit), (c.head, c.unit), (c.head, timer)):
            remove_dropin(c, host, one)
        c.sh(c.head, "systemctl reset-failed %s; true" % c.unit)
    detail = ("the follower's page cache filled (%d MiB ballast and the weights), its own drop off as on a ray "
              "follower; %s; the drop record's 'asked' entry lies between the fill and the head's "
              "ExecMainStartTimestampMonotonic each time, the ballast no longer cached, the Ray worker's process kept; a "
              "completion answered" % (BALLAST_MIB, "; ".join(details) or "no drop seen"))
    return seconds, detail
