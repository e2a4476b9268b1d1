# -*- coding: utf-8 -*-
"""gb10_facts' parameters pointed at one recorded GB10 tree under tests/fixtures/gb10 (shared by the
module's tests and the tests that need facts as host_facts would gather them)."""

import os


def params_for(root, **over):
    params = {
        "sysfs_net": os.path.join(root, "sys/class/net"),
        "sysfs_infiniband": os.path.join(root, "sys/class/infiniband"),
        "proc_driver_version": os.path.join(root, "proc/driver/nvidia/version"),
        "meminfo": os.path.join(root, "proc/meminfo"),
        # No tree records a GPU gate: memory.cuda_total_bytes is None unless a test writes one.
        "gpu_gate_file": os.path.join(root, "var/lib/sparkfleet/gpu-gate.json"),
        "nccl_conf": os.path.join(root, "etc/nccl.conf"),
        "nvidia_smi": os.path.join(root, "bin/nvidia-smi"),
        "cuobjdump": os.path.join(root, "bin/cuobjdump"),
        "ip_command": os.path.join(root, "bin/ip"),
        "nccl_library_paths": [],
        "model_dirs": {},
        # The trees record no packages: an empty list (true prints nothing).
        "dpkg_query": "true",
        "netdev_pattern": r"^enP?\d*p\d+s0f[01]np[01]$",
    }
    params.update(over)
    return params
