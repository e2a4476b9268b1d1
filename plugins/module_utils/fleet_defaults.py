# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The defaults that several roles must agree on, each written once.

A path or name that one role writes and others read (the virtualenv, the NCCL
environment file, the Ray token, the vLLM secrets directory, the model store,
the service account, the fabric interface, the page-cache drop's port and record) has
its default here. Each role's own
variable defaults to it through the ``sparkfleet.gb10.fleet_default`` lookup, which
returns the host's inventory variable where the entry names one and the inventory
sets it (the rule is written there once, not at each reader), so changing a
default here changes it for writer and readers together. GB10/SM121 facts that
change behaviour are not here: they are rules (``rulebook.py``).

Pure Python, standard library only.
"""

from __future__ import annotations

# name: (default, the inventory variable that sets it for every role or None, who writes it, who reads it)
FLEET_DEFAULTS = {
    "venv_path": ("/opt/sparkfleet/venv", "sparkfleet_venv_path",
                  "vllm_venv builds it", "ray, vllm_service, fleet_verify, fleet_health, fleet_benchmark"),
    "service_user": ("sparkfleet", "sparkfleet_service_user",
                     "ray and vllm_service run as it", "the same roles"),
    "model_store_dir": ("/var/lib/sparkfleet/models", "sparkfleet_model_store_dir",
                        "model_store places each model with a source in <dir>/<name>",
                        "vllm_service serves it from there, fleet_benchmark reads its tokenizer there"),
    "fabric_ifname": ("enp1s0f1np1", "sparkfleet_fabric_ifname",
                      "qsfp_network configures it (the cabled half of QSFP port 1)",
                      "ray, vllm_service (NCCL/Gloo/UCX interface), fleet_verify, fleet_health, "
                      "preflight, the summary"),
    "nccl_env_file": ("/etc/sparkfleet/nccl.env", None,
                      "nccl writes LD_LIBRARY_PATH and VLLM_NCCL_SO_PATH of the NCCL it built",
                      "ray and vllm_service load it (EnvironmentFile), fleet_health checks it"),
    "ray_auth_token_file": ("/etc/sparkfleet/ray/auth_token", None,
                            "ray writes the cluster's token on the head", "ray (on workers), vllm_service (ray executor), "
                            "fleet_verify and fleet_health pass it to Ray"),
    "venv_freeze_name": ("sparkfleet-freeze.txt", None,
                         "vllm_venv writes the virtualenv's pip freeze into <venv_path>/<this name>",
                         "ray and vllm_service restart their units when it changes (start_inputs)"),
    "ray_head_unit": ("sparkfleet-ray-head", "ray_head_service_name", "ray installs the Ray head's systemd unit under this name",
                      "fleet_verify (the NCCL its process loaded), fleet_health (the unit's state)"),
    "ray_worker_unit": ("sparkfleet-ray-worker", "ray_worker_service_name", "ray installs a Ray worker's systemd unit under this name",
                        "fleet_verify (the NCCL its process loaded), fleet_health (the unit's state)"),
    "gpu_gate_file": ("/var/lib/sparkfleet/gpu-gate.json", None,
                      "vllm_venv's GPU gate records what CUDA reports (total memory, torch, compute capability)",
                      "gb10_facts (memory.cuda_total_bytes), so preflight sizes memory from what CUDA sees"),
    "vllm_secrets_dir": ("/etc/sparkfleet/vllm", None,
                         "vllm_service writes <name>.env (VLLM_API_KEY, HF_TOKEN)",
                         "fleet_health reads each endpoint's key there"),
    "page_cache_port": (8875, None,
                        "vllm_service: each member of a multi-node model answers its head's page-cache drop request on "
                        "this TCP port of its fabric address (sparkfleet-page-cache.socket)",
                        "vllm_service (the head's ExecStartPre asks every member there), fabric_firewall (fabric only)"),
    "page_cache_state_file": ("/var/lib/sparkfleet-page-cache/drops.json", None,
                              "vllm_service's page-cache helper records each drop (when, asked by whom, for which start)",
                              "fleet_health's probe (sparkfleet_page_cache_dropped_timestamp_seconds), the summary "
                              "(the fleet table), tools/chaos.py"),
    "reboot_hold_file": ("/var/lib/sparkfleet-os-update/do-not-reboot.json", None,
                         "os_update writes it after a stop past its upgrade (why, the running kernel, the kernel the next "
                         "boot would have started) and removes it when the host's update passes its gates",
                         "fleet_health's probe (sparkfleet_do_not_reboot)"),
    "benchmark_file": ("/var/lib/sparkfleet/benchmark.json", "sparkfleet_benchmark_file",
                       "fleet_benchmark writes the last sweep of each model whose API the host serves",
                       "fleet_health's probe (the sparkfleet_benchmark_* metrics), the summary (the fleet table)"),
}


def fleet_default(name):
    """The default of ``name``; KeyError names the known ones."""
    if name not in FLEET_DEFAULTS:
        raise KeyError("unknown fleet default '%s'; known: %s" % (name, ", ".join(sorted(FLEET_DEFAULTS))))
    return FLEET_DEFAULTS[name][0]


def inventory_variable(name):
    """The inventory variable that sets ``name`` for every role, or None; KeyError names the known ones."""
    fleet_default(name)
    return FLEET_DEFAULTS[name][1]


def fleet_value(name, host_vars):
    """A host's value of ``name``: its inventory variable where the inventory sets one (an empty one counts as
    unset), else the default. The lookup applies the same rule to the play's variables."""
    var = inventory_variable(name)
    value = (host_vars or {}).get(var) if var else None
    return fleet_default(name) if value is None or (isinstance(value, str) and not value.strip()) else value
