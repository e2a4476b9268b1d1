#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Prove, inside the environment of a unit, that torch, vLLM and NCCL are the right ones."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_gate
short_description: Prove that the virtualenv's torch, vLLM and NCCL are the ones a GB10 needs, as a unit loads them
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
  - sparkfleet.gb10.attributes.probe
description:
  - Runs a probe under the virtualenv's Python with the environment the sparkfleet units get (the NCCL
    environment file of the role C(sparkfleet.gb10.nccl) and O(environment)), and reads from inside that process
    torch's version and CUDA build, whether CUDA sees the GPU, its compute capability and memory, whether
    vLLM's kernels load the way the release loads them (C(import vllm._C) on CUDA; on the CPU build the release's
    own C(CpuPlatform.import_kernels()), which picks C(_C), C(_C_AVX512) or C(_C_AVX2) for the CPU), and the
    library each NCCL entry point resolves to in the global scope (C(dlsym) then C(dladdr), which is what torch's
    own collectives bind to), by path, not by version.
  - In O(form=cuda) (a Spark) every check runs. In O(form=cpu) (the simulated fleet, whose vLLM is the CPU
    build) the CUDA checks are not run and the result says so; the imports and the NCCL resolution are checked.
  - Fails naming what was found and the fix; a probe killed by a signal is reported with the signal, what it
    was loading, the likely cause (SIGILL, an instruction set the CPU lacks) and the fix. Read-only; skipped in check mode (the virtualenv may not exist yet).
options:
  python:
    description: The virtualenv's interpreter.
    type: path
    required: true
  form:
    description: C(cuda) for a GPU host, C(cpu) for a host whose torch and vLLM are CPU builds (simulation).
    type: str
    choices: [cuda, cpu]
    default: cuda
  env_file:
    description:
      - The NCCL environment file the units load (C(EnvironmentFile=)); its variables are set for the probe.
      - Empty for none; then the NCCL checks are not run.
    type: path
    default: ""
  environment:
    description: More variables of the units' environment (they win over the file's).
    type: dict
    default: {}
  nccl_library:
    description:
      - The NCCL library the entry points must resolve to. Empty takes the environment file's
        C(VLLM_NCCL_SO_PATH); with neither, the NCCL checks are not run.
    type: path
    default: ""
  capability:
    description: The compute capability the GPU must have (C(12.1) on a Spark); empty accepts any.
    type: str
    default: ""
  entry_points:
    description: NCCL symbols to resolve; empty takes the rule book's nccl_entry_points.
    type: list
    elements: str
    default: []
  vllm:
    description:
      - Whether vLLM's kernels must load. Only C(tools/gpu-check.sh) turns it off, on lent GPU machines where no vLLM
        wheel can travel; the result then says that vLLM was not checked.
    type: bool
    default: true
  host:
    description: The host's inventory name, for the failure message.
    type: str
    default: ""
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The GPU gate of the virtualenv
  sparkfleet.gb10.gpu_gate:
    python: /opt/sparkfleet/venv/bin/python
    env_file: /etc/sparkfleet/nccl.env
    capability: "12.1"
    host: "{{ inventory_hostname }}"
  register: gate
"""

RETURN = r"""
reading:
  description: What the probe read inside the process.
  returned: when the probe ran
  type: dict
  sample:
    torch: 2.11.0
    torch_cuda: "12.9"
    cuda_available: true
    capability: "12.1"
    cuda_memory_total: 128526278656
    entry_points: {ncclAllReduce: /opt/sparkfleet/nccl/2.28.9-sm121/lib/libnccl.so.2.28.9}
    nccl_mapped: [/opt/sparkfleet/nccl/2.28.9-sm121/lib/libnccl.so.2.28.9]
problems:
  description: What is wrong, each with its fix; empty when the gate passed.
  returned: always
  type: list
  elements: str
form:
  description: The form the gate ran in.
  returned: always
  type: str
summary:
  description: One line of what the gate read, for the fleet table.
  returned: when the probe ran
  type: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.gb10.plugins.module_utils import gpu_gate
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="path", required=True),
            form=dict(type="str", choices=list(gpu_gate.FORMS), default="cuda"),
            env_file=dict(type="path", default=""),
            environment=dict(type="dict", default={}),
            nccl_library=dict(type="path", default=""),
            capability=dict(type="str", default=""),
            entry_points=dict(type="list", elements="str", default=[]),
            vllm=dict(type="bool", default=True),
            host=dict(type="str", default=""),
        ),
        supports_check_mode=False,
    )
    p = module.params
    who = (p["host"] + ": ") if p["host"] else ""
    result = dict(changed=False, form=p["form"], problems=[])
    if not os.access(p["python"], os.X_OK):
        module.fail_json(msg="%sthe virtualenv's Python %s is missing: run the vllm_venv role" % (who, p["python"]),
                         **result)
    file_env = {}
    if p["env_file"]:
        try:
            with open(p["env_file"]) as handle:
                file_env = gpu_gate.parse_env_file(handle.read())
        except (IOError, OSError) as exc:
            module.fail_json(msg="%sthe NCCL environment file %s cannot be read (%s): run the nccl role"
                             % (who, p["env_file"], exc), **result)
    # The units' environment: systemd's minimal one, the file's, then the role's variables.
    env = {"PATH": os.path.dirname(p["python"]) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
    env.update(file_env)
    env.update(dict((str(k), str(v)) for k, v in p["environment"].items()))
    nccl_library = p["nccl_library"] or file_env.get("VLLM_NCCL_SO_PATH", "")
    entry_points = p["entry_points"] or rulebook.setting("nccl_entry_points")
    rc, out, err = module.run_command([p["python"], "-c", gpu_gate.PROBE, json.dumps(entry_points), p["form"],
                                       "1" if p["vllm"] else "0"], environ_update=env, cwd="/", check_rc=False)
    result["nccl_library"] = nccl_library
    if rc < 0:
        module.fail_json(msg=who + gpu_gate.signal_problem(rc, err, p["python"]), rc=rc, stderr=err, **result)
    if rc != 0:
        module.fail_json(msg="%sthe probe failed under %s (rc %d): %s" % (who, p["python"], rc, (err or out)[-2000:]),
                         rc=rc, stderr=err, **result)
    try:
        reading = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        module.fail_json(msg="%sthe probe printed no reading: %s %s" % (who, out[-1000:], err[-1000:]), **result)
    if nccl_library:
        # The CUDA that built the preloaded NCCL, from its banner: torch's CUDA major must be the same.
        reading["nccl_version"], reading["nccl_cuda"] = gpu_gate.nccl_build(nccl_library)
    result["reading"] = reading
    result["summary"] = gpu_gate.summary(reading, p["form"])
    result["problems"] = gpu_gate.judge(reading, p["form"], capability=p["capability"],
                                        nccl_library=nccl_library, entry_points=entry_points, vllm=p["vllm"])
    if result["problems"]:
        module.fail_json(msg="%sGPU gate (%s form) failed: %s" % (who, p["form"], "; ".join(result["problems"])),
                         **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
