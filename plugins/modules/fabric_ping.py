#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Don't-fragment pings to every fabric peer of a host, all at once, in one call."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fabric_ping
short_description: Don't-fragment pings from this host to each of its fabric peers, run concurrently
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
  - sparkfleet.gb10.attributes.no_diff
description:
  - Runs C(ping -M do -s PAYLOAD -c COUNT -i INTERVAL -W WAIT -I IFNAME ADDRESS) for every target at the same
    time and returns each one's result, in the order of O(targets), shaped like the results of a looped
    M(ansible.builtin.command) (C(item), C(cmd), C(rc), C(stdout_lines), C(stderr_lines)).
  - One call per host however many peers it has, where a loop costs one round trip (and one ping's
    duration) per peer; the pings of all peers overlap.
  - Read-only; never fails on a ping that fails (the caller judges C(rc)), only on bad parameters or a
    missing C(ping).
options:
  targets:
    description: What to ping.
    type: list
    elements: dict
    required: true
    suboptions:
      peer:
        description: The peer's inventory name (returned in C(item)).
        type: str
        required: true
      ifname:
        description: The local interface to send from (C(-I)).
        type: str
        required: true
      address:
        description: The peer's fabric address on that interface.
        type: str
        required: true
  payload:
    description: ICMP payload bytes (C(-s)); MTU minus 28 fills a frame.
    type: int
    required: true
  count:
    description: Pings per target (C(-c)); all must come back.
    type: int
    default: 3
  interval:
    description: Seconds between the pings of one target (C(-i)); 0.2 is the least an unprivileged ping allows.
    type: float
    default: 0.2
  wait:
    description: Seconds to wait for each reply (C(-W)).
    type: int
    default: 2
  ping:
    description: The ping command (name or path).
    type: str
    default: ping
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Ping every peer's fabric address with don't-fragment jumbo frames
  sparkfleet.gb10.fabric_ping:
    targets:
      - {peer: spark-2, ifname: enp1s0f1np1, address: 192.168.100.11}
    payload: 8972
  register: pings
"""

RETURN = r"""
results:
  description: One entry per target, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    item:
      description: C([peer, ifname]) of the target.
      type: list
    cmd:
      description: The argv run; its last element is the address.
      type: list
    rc:
      description: ping's exit status (0 when every ping came back).
      type: int
    stdout_lines:
      description: ping's output.
      type: list
    stderr_lines:
      description: ping's errors.
      type: list
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkfleet.gb10.plugins.module_utils import processes


def argv_of(ping, target, payload, count, interval, wait):
    return [ping, "-M", "do", "-s", str(payload), "-c", str(count), "-i", "%g" % interval, "-W", str(wait),
            "-I", target["ifname"], target["address"]]


def ping_all(targets, payload, count=3, interval=0.2, wait=2, ping="ping", popen=processes.start):
    """Start every ping, then collect them in order: the total is about the slowest one, not the sum."""
    running = []
    for target in targets:
        argv = argv_of(ping, target, payload, count, interval, wait)
        try:
            proc = popen(argv, env={"LC_ALL": "C", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})
        except OSError as exc:
            running.append((target, argv, None, str(exc)))
            continue
        running.append((target, argv, proc, None))
    results = []
    for target, argv, proc, error in running:
        if proc is None:
            rc, out, err = 127, "", error
        else:
            out, err = proc.communicate()
            rc = proc.returncode
        results.append({"item": [target["peer"], target["ifname"]], "cmd": argv, "rc": rc,
                        "stdout": out, "stderr": err,
                        "stdout_lines": out.splitlines(), "stderr_lines": err.splitlines()})
    return results


def main():
    module = AnsibleModule(
        argument_spec=dict(
            targets=dict(type="list", elements="dict", required=True, options=dict(
                peer=dict(type="str", required=True),
                ifname=dict(type="str", required=True),
                address=dict(type="str", required=True),
            )),
            payload=dict(type="int", required=True),
            count=dict(type="int", default=3),
            interval=dict(type="float", default=0.2),
            wait=dict(type="int", default=2),
            ping=dict(type="str", default="ping"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["payload"] <= 0 or params["count"] <= 0 or params["wait"] <= 0 or params["interval"] < 0.2:
        module.fail_json(msg="fabric_ping: payload, count and wait must be positive and interval at least 0.2 s "
                             "(got payload=%(payload)s count=%(count)s wait=%(wait)s interval=%(interval)s)" % params)
    ping = params["ping"]
    if "/" not in ping:
        ping = module.get_bin_path(ping, required=True, opt_dirs=["/usr/sbin", "/sbin", "/bin"])
    results = ping_all(params["targets"], params["payload"], params["count"], params["interval"], params["wait"], ping)
    module.exit_json(changed=False, results=results)


if __name__ == "__main__":
    main()
