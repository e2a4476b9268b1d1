# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""How exposed the collection's systemd units may be, and reading ``systemd-analyze security``.

The thresholds are the project's policy, not a GB10 fact (so they are not in the rule
book): every unit the roles write must score at or below its threshold by
``systemd-analyze security`` (0 = fully locked down, 10 = unprotected). The unit tests
(tests/unit/roles/test_unit_security.py, offline, on the rendered templates) and the
cluster scenario (molecule/cluster/verify.yml, on the running units) read them from here.

Pure Python, no Ansible imports.
"""

from __future__ import annotations

import re

# Why the two numbers differ: the Ray units cannot have a private /tmp (Ray's session
# directory /tmp/ray holds the raylet's sockets, which the vLLM driver of the ray executor
# must reach), and they start arbitrary Python workers; vLLM's API service keeps a
# private /tmp. Neither can have PrivateDevices (the GPU and the RDMA devices are device
# nodes: DevicePolicy=closed plus DeviceAllow instead), PrivateNetwork (they serve and
# talk NCCL over the fabric) or MemoryDenyWriteExecute (CUDA, Triton and torch compile
# kernels at run time into writable+executable memory).
# The model store's rsync daemon touches no GPU: it binds its port, chroots into the store and
# becomes nobody, so it keeps only those capabilities and a read-only file system.
EXPOSURE_THRESHOLDS = {
    "vllm": 5.0,
    "ray": 6.0,
    "rsyncd": 3.0,
}
EXPOSURE_REASON = (
    "systemd-analyze security must rate the vLLM units at most 5.0 and the Ray units at most 6.0 "
    "while the GPU, the RDMA devices, the NCCL library, the fabric and the model directory stay "
    "reachable; Ray shares /tmp/ray with the vLLM driver, so it cannot have PrivateTmp. The model "
    "store's rsync daemon, which needs none of these, at most 3.0."
)

# "→ Overall exposure level for sparkfleet-vllm-tiny.service: 2.2 OK 🙂"
_OVERALL = re.compile(r"Overall exposure level for (?P<unit>\S+): (?P<exposure>[0-9]+(?:\.[0-9]+)?) (?P<rating>[A-Z]+)")


def threshold(kind):
    """The exposure threshold of a unit kind ('vllm' or 'ray'); KeyError naming the kinds when unknown."""
    if kind not in EXPOSURE_THRESHOLDS:
        raise KeyError("unknown unit kind '%s'; known kinds: %s" % (kind, ", ".join(sorted(EXPOSURE_THRESHOLDS))))
    return EXPOSURE_THRESHOLDS[kind]


def parse_exposure(text):
    """Every overall exposure line of ``systemd-analyze security UNIT...`` output, in order:
    a list of ``{'unit', 'exposure', 'rating'}``. Empty when there is none."""
    found = []
    for match in _OVERALL.finditer(text or ""):
        found.append({"unit": match["unit"], "exposure": float(match["exposure"]), "rating": match["rating"]})
    return found


def analyze_threshold(kind):
    """The threshold as ``systemd-analyze security --threshold=`` takes it: systemd counts
    exposure internally from 0 to 100 and prints it divided by ten (5.0 is 50)."""
    return int(round(threshold(kind) * 10))
