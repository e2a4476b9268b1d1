#!/usr/bin/python3
# Apache-2.0
"""Restarts a multi-node vLLM follower (a --headless rank) when its head goes away.

Managed by sparkfleet.gb10.vllm_service. A headless rank whose head process
dies does not exit: it waits forever on the old group, and the restarted head
then waits forever for a rank that never joins (measured on vLLM's mp executor).
Restarting the follower lets the new head's group form again. This runs next to
each follower unit and restarts it, never the head:

- when the head's API had answered /health and then refuses connections or
  answers with a server error ``--failures`` times in a row (the head died);
- when the head has not answered once within ``--grace`` seconds of the
  follower starting (the head died while loading, before it ever answered).

A timeout alone is not counted as the head going away (a loaded CPU or a
long request can make /health slow); it counts only against the grace period.
The follower is restarted only while it is active: a follower a person stopped
stays stopped. Standard library only.
"""

from __future__ import annotations

import argparse
import http.client
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

UP, DOWN, UNKNOWN = "up", "down", "unknown"


def observe(url, timeout):
    """UP when /health answers 2xx, DOWN when refused or 5xx, UNKNOWN on a timeout or anything else."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return UP if 200 <= response.status < 300 else UNKNOWN
    except urllib.error.HTTPError as err:
        return DOWN if err.code >= 500 else UNKNOWN
    except urllib.error.URLError as err:
        reason = err.reason
        if isinstance(reason, (ConnectionRefusedError, ConnectionResetError)):
            return DOWN
        return UNKNOWN
    except (ConnectionRefusedError, ConnectionResetError, http.client.RemoteDisconnected):
        return DOWN
    except (socket.timeout, TimeoutError, OSError):
        return UNKNOWN


class Watch(object):
    """What has been seen of the head since the follower last started."""

    def __init__(self, failures, grace):
        self.failures = failures
        self.grace = grace
        self.reset()

    def reset(self):
        self.seen_up = False
        self.down_in_a_row = 0

    def step(self, follower_active, follower_age, seen):
        """The reason to restart the follower now, or None."""
        if not follower_active:
            self.reset()
            return None
        if seen == UP:
            self.seen_up = True
            self.down_in_a_row = 0
            return None
        self.down_in_a_row = self.down_in_a_row + 1 if seen == DOWN else 0
        if self.seen_up and self.down_in_a_row >= self.failures:
            return "the head stopped answering (%d checks in a row refused or failed)" % self.down_in_a_row
        if not self.seen_up and follower_age >= self.grace:
            return "the head has not answered within %d s of this follower starting" % self.grace
        return None


def follower_state(systemctl, unit):
    """(active, seconds since it became active) from systemd."""
    out = subprocess.run([systemctl, "show", "-p", "ActiveState", "-p", "ActiveEnterTimestampMonotonic", unit],
                         capture_output=True, text=True, check=False).stdout
    props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    active = props.get("ActiveState") == "active"
    since_us = int(props.get("ActiveEnterTimestampMonotonic") or 0)
    age = time.monotonic() - since_us / 1e6 if active and since_us else 0.0
    return active, age


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unit", required=True, help="the follower's unit")
    parser.add_argument("--url", required=True, help="the head's /health URL")
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--failures", type=int, default=3)
    parser.add_argument("--grace", type=float, default=1800.0)
    parser.add_argument("--systemctl", default="systemctl")
    args = parser.parse_args(argv)
    watch = Watch(args.failures, args.grace)
    print("watching %s for %s" % (args.url, args.unit), flush=True)
    while True:
        active, age = follower_state(args.systemctl, args.unit)
        seen = observe(args.url, args.timeout) if active else UNKNOWN
        reason = watch.step(active, age, seen)
        if reason:
            print("restarting %s: %s" % (args.unit, reason), flush=True)
            subprocess.run([args.systemctl, "restart", "--no-block", args.unit], check=False)
            watch.reset()
            time.sleep(max(args.interval, 15.0))  # let systemd start it before looking again
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())
