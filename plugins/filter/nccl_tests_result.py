# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_tests_result
author: sparkfleet.gb10 developers
short_description: Judge an nccl-tests run between Sparks against the rule book's bandwidth floor
version_added: "0.1.0"
description:
  - Reads the output of an nccl-tests program (C(all_reduce_perf), C(all_gather_perf)) run across the members
    of a cluster with C(NCCL_DEBUG=INFO), and returns the average bus bandwidth, the transport NCCL chose,
    the rows with wrong results, and whether the run proves RoCE.
  - The floor is the rule book's C(nccl_bus_bandwidth_floor_gbps) (rule nccl_bandwidth_floor). RoCE between two
    Sparks reaches about 24 GB/s; NCCL's silent fallback to TCP sockets about 2 GB/s. A run below the floor,
    over sockets, or with wrong results fails, and the message says which trap it is and what to check.
options:
  _input:
    description: Standard output (and error) of the nccl-tests program.
    type: str
    required: true
  floor_gbps:
    description: Bus bandwidth floor in GB/s; default from the rule book.
    type: float
  host:
    description: Inventory name used in messages.
    type: str
"""

EXAMPLES = r"""
- name: Judge the run
  ansible.builtin.set_fact:
    nccl_bw: "{{ __run.stdout | sparkfleet.gb10.nccl_tests_result(host=inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: The verdict and what it rests on.
  type: dict
  contains:
    ok: {description: True when the run proves RoCE at or above the floor with no wrong results., type: bool}
    busbw_gbps: {description: Average bus bandwidth (None when the output has none)., type: float}
    floor_gbps: {description: The floor applied., type: float}
    transport: {description: "C(roce), C(socket) or C(unknown) (NCCL_DEBUG=INFO not set)", type: str}
    wrong: {description: Message sizes whose results were wrong., type: list}
    message: {description: What the run shows and, when it fails, what to do., type: str}
"""

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.]+)", re.M)
# A data row: size count type redop root, then time algbw busbw #wrong for out-of-place and in-place.
_ROW = re.compile(r"^\s+(\d+)\s+\d+\s+\S+\s+\S+\s+-?\d+\s+(.*)$", re.M)
_NET_IB = re.compile(r"NCCL INFO NET/IB\s*:\s*Using\s+(.*)$", re.M)
_NET_SOCKET = re.compile(r"NCCL INFO (?:NET/Socket\s*:\s*Using|Using network Socket)", re.M)


def _wrong_rows(output):
    wrong = []
    for size, rest in _ROW.findall(output):
        fields = rest.split()
        # time algbw busbw #wrong, twice; #wrong is "N/A" for some collectives.
        counts = [fields[i] for i in (3, 7) if i < len(fields)]
        if any(c.isdigit() and int(c) > 0 for c in counts):
            wrong.append(int(size))
    return wrong


def nccl_tests_result(output, floor_gbps=None, host=None):
    if not isinstance(output, str):
        raise AnsibleFilterError("nccl_tests_result: input must be the program's output (a string), got %s"
                                 % type(output).__name__)
    who = "%s: " % host if host else ""
    floor = float(floor_gbps if floor_gbps is not None else rulebook.setting("nccl_bus_bandwidth_floor_gbps"))
    roce = rulebook.setting("nccl_bus_bandwidth_roce_gbps")
    socket = rulebook.setting("nccl_bus_bandwidth_socket_gbps")

    match = _AVG.search(output)
    busbw = float(match.group(1)) if match else None
    if _NET_SOCKET.search(output):
        transport = "socket"
    elif _NET_IB.search(output):
        transport = "roce"
    else:
        transport = "unknown"
    wrong = _wrong_rows(output)

    problems = []
    if busbw is None:
        problems.append("the output has no 'Avg bus bandwidth' line: the run did not complete (read it below)")
    if wrong:
        problems.append("wrong results at %s bytes: an NCCL without SASS for this GPU, or mismatched NCCL versions "
                        "between members (rule nccl_sm121)" % ", ".join(str(w) for w in wrong))
    if transport == "socket":
        problems.append("NCCL used TCP sockets, not RoCE (about %s GB/s instead of %s): check that NCCL_IB_DISABLE "
                        "is 0 in the environment and absent from /etc/nccl.conf, that NCCL_IB_HCA names ACTIVE RoCE "
                        "devices of the cabled port and that NCCL_NET_PLUGIN=none (rules nccl_ib_transport, "
                        "nccl_conf_ib_disable, nccl_ib_hca)" % (socket, roce))
    if busbw is not None and busbw < floor:
        problems.append("bus bandwidth %.2f GB/s is below the floor %.1f GB/s (RoCE gives about %s GB/s, sockets "
                        "about %s)%s" % (busbw, floor, roce, socket,
                                         "" if transport == "socket" else
                                         "; with NCCL_DEBUG=INFO look for 'NET/Socket' (socket fallback), and check "
                                         "MTU 9000 on both ends and that both halves of the port are up"))
    if problems:
        return {"ok": False, "busbw_gbps": busbw, "floor_gbps": floor, "transport": transport, "wrong": wrong,
                "message": who + "; ".join(problems) + "."}
    note = "" if transport == "roce" else " (transport not shown: run with NCCL_DEBUG=INFO to see it)"
    return {"ok": True, "busbw_gbps": busbw, "floor_gbps": floor, "transport": transport, "wrong": wrong,
            "message": "%sbus bandwidth %.2f GB/s over %s, at or above the floor %.1f GB/s%s."
                       % (who, busbw, transport, floor, note)}


class FilterModule(object):
    def filters(self):
        return {"nccl_tests_result": nccl_tests_result}
