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
  - The transport is what NCCL's channel lines say (C(via NET/IB/...), C(via NET/Socket/...), C(via P2P/...),
    C(via SHM/...)), not its C(Using network ...) line at init, which names the network NCCL would use
    between hosts even when every channel runs over P2P inside one host.
  - An NCCL without SASS for the GPU fails its first kernel launch (C(Cuda failure 'named symbol not found'),
    or C(no kernel image is available)); the verdict names that trap (rule nccl_sm121), not the transport.
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
    ok:
      description:
        - True when the run completed at or above the floor, with no wrong results and no channel over sockets.
        - Between Sparks every channel crosses the network, so there it means RoCE at speed; a run inside one host
          (C(transport) C(p2p) or C(shm)) passes on its bandwidth and its message says it proves nothing about RoCE.
      type: bool
    busbw_gbps: {description: Average bus bandwidth (None when the output has none)., type: float}
    floor_gbps: {description: The floor applied., type: float}
    transport:
      description:
        - "C(roce) (a channel via NET/IB), C(socket) (a channel via NET/Socket), C(p2p) or C(shm) (every channel
          inside one host: no network was used, so the run proves nothing about RoCE), or C(unknown) (no channel
          lines: NCCL_DEBUG=INFO not set, or the run died before connecting)."
      type: str
    transports: {description: "Every transport the channel lines name, e.g. C([p2p]) or C([roce, p2p]).", type: list}
    failure:
      description: "The trap recognised in the output: C(missing_sass), C(nccl_error) (another NCCL WARN), or None."
      type: str
    wrong: {description: Message sizes whose results were wrong., type: list}
    message: {description: "What the run shows and, when it fails, what to do.", type: str}
"""

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.]+)", re.M)
# A data row: size count type redop root, then time algbw busbw #wrong for out-of-place and in-place.
_ROW = re.compile(r"^\s+(\d+)\s+\d+\s+\S+\s+\S+\s+-?\d+\s+(.*)$", re.M)
# NCCL's channel lines (transport/net.cc, p2p.cc, shm.cc): "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0".
_VIA = re.compile(r"NCCL INFO Channel \d+/\d+ : .* via (NET/IB|NET/Socket|NET/\w+|P2P|SHM|COLLNET)\b", re.M)
_TRANSPORT = {"NET/IB": "roce", "NET/Socket": "socket", "P2P": "p2p", "SHM": "shm", "COLLNET": "collnet"}
# Which transport decides the verdict when several appear: a socket channel anywhere is the trap.
_PRECEDENCE = ("socket", "roce", "collnet", "net", "p2p", "shm")
# The first kernel launch of an NCCL without SASS for this GPU (cudaErrorSymbolNotFound from the
# device-function lookup, or cudaErrorNoKernelImageForDevice).
_MISSING_SASS = re.compile(r"NCCL WARN Cuda failure '(named symbol not found|no kernel image is available"
                           r"[^']*|invalid device function)'")
_NCCL_WARN = re.compile(r"NCCL WARN (.*)$", re.M)


def _wrong_rows(output):
    wrong = []
    for size, rest in _ROW.findall(output):
        fields = rest.split()
        # time algbw busbw #wrong, twice; #wrong is "N/A" for some collectives.
        counts = [fields[i] for i in (3, 7) if i < len(fields)]
        if any(c.isdigit() and int(c) > 0 for c in counts):
            wrong.append(int(size))
    return wrong


def _transports(output):
    seen = set(_TRANSPORT.get(via, "net") for via in _VIA.findall(output))
    ordered = [t for t in _PRECEDENCE if t in seen]
    return (ordered[0] if ordered else "unknown"), ordered


def nccl_tests_result(output, floor_gbps=None, host=None):
    if not isinstance(output, str):
        raise AnsibleFilterError("nccl_tests_result: input must be the program's output (a string), got %s"
                                 % type(output).__name__)
    who = "%s: " % host if host else ""
    floor = float(floor_gbps if floor_gbps is not None else rulebook.setting("nccl_bus_bandwidth_floor_gbps"))
    roce = rulebook.setting("nccl_bus_bandwidth_roce_gbps")
    socket = rulebook.setting("nccl_bus_bandwidth_socket_gbps")
    sass = rulebook.setting("nccl_required_sass")

    match = _AVG.search(output)
    busbw = float(match.group(1)) if match else None
    transport, transports = _transports(output)
    wrong = _wrong_rows(output)
    missing_sass = _MISSING_SASS.search(output)
    warnings = _NCCL_WARN.findall(output)
    failure = "missing_sass" if missing_sass else ("nccl_error" if warnings and busbw is None else None)

    problems = []
    if missing_sass:
        problems.append("NCCL failed its first kernel launch with '%s': the libnccl it loaded has no SASS for this "
                        "GPU (on a Spark: %s). Build NCCL for the GPU's compute capability with the "
                        "sparkfleet.gb10.nccl role, load it first (EnvironmentFile=/etc/sparkfleet/nccl.env in the "
                        "units, LD_LIBRARY_PATH for a manual run) and check it with cuobjdump --list-elf "
                        "(rule nccl_sm121)" % (missing_sass.group(1), sass))
    elif busbw is None:
        problems.append("the output has no 'Avg bus bandwidth' line: the run did not complete%s"
                        % ((" (first NCCL warning: %s)" % warnings[0].strip()) if warnings else " (read it below)"))
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
                                         "; with NCCL_DEBUG=INFO look for 'via NET/Socket' (socket fallback), and "
                                         "check MTU 9000 on both ends and that both halves of the port are up"))
    result = {"busbw_gbps": busbw, "floor_gbps": floor, "transport": transport, "transports": transports,
              "wrong": wrong, "failure": failure}
    if problems:
        result.update(ok=False, message=who + "; ".join(problems) + ".")
        return result
    if transport == "roce":
        note = ""
    elif transport in ("p2p", "shm"):
        note = (" (every channel ran inside one host over %s: the run used no network and proves nothing about "
                "RoCE between Sparks)" % transport.upper())
    else:
        note = " (transport not shown: run with NCCL_DEBUG=INFO to see it)"
    result.update(ok=True, message="%sbus bandwidth %.2f GB/s over %s, at or above the floor %.1f GB/s%s."
                                   % (who, busbw, transport, floor, note))
    return result


class FilterModule(object):
    def filters(self):
        return {"nccl_tests_result": nccl_tests_result}
