# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the fleet_health role's probe checks on a host (its ``probe.json``, read by
``roles/fleet_health/files/sparkfleet-health-probe.py``), from the host's part of the fleet plan
(``fleet_plan.host_view``), the role's settings (lookup ``sparkfleet.gb10.role_vars``) and the rule book.

Each section of a check that is off is empty (the probe skips it). Filters ``health_endpoints``,
``health_peers`` and ``health_probe_config``.

Pure Python, standard library only.
"""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
from ansible_collections.sparkfleet.gb10.plugins.module_utils.role_vars import integer, on

# The file the probe writes into the textfile collector's directory.
TEXTFILE_NAME = "sparkfleet_health.prom"
# The settings passed to the probe as they are (each under its own name).
FILES = ("nccl_env_file", "benchmark_file", "page_cache_file", "reboot_hold_file")
KERNEL_PATHS = ("boot_dir", "modinfo", "proc_osrelease", "grub_dir", "etc_default", "lib_dir")


def endpoints(view, secrets_dir):
    """The endpoints the host serves (its own models, and multi-node models whose first node it is), each called
    where the host's gates call it, with the file of its API key: the entry's ``api_key_file`` where it names one,
    else ``<secrets_dir>/<name>.env`` (sparkfleet.gb10.vllm_service's)."""
    out = []
    for service in view.get("endpoints") or []:
        model = service["model"]
        key_file = model["api_key_file"] if "api_key_file" in model else "%s/%s.env" % (secrets_dir, model["name"])
        out.append({"name": model["name"], "served_name": service["served_name"], "port": service["port"],
                    "host": service["call_address"], "api_key_file": key_file})
    return out


def peers(hosts, hostvars, host):
    """The other hosts of ``hosts`` (the fabric group) with a fabric address (``sparkfleet_fabric_address``), each
    ``{name, address}``: the probe pings each over the fabric."""
    out = []
    for name in hosts or []:
        if name == host:
            continue
        node_vars = hostvars[name]
        address = node_vars["sparkfleet_fabric_address"] if "sparkfleet_fabric_address" in node_vars else ""
        if len(address) > 0:
            out.append({"name": name, "address": address})
    return out


def units(view, settings):
    """The units the probe watches: the host's vLLM units, its Ray unit (head or worker; with the ``ray`` check)
    and the memory guard's (with the ``memory`` check, where ``memory_guard_unit`` names one), each
    ``{name, kind}``."""
    out = [{"name": service["unit"], "kind": "vllm"} for service in view.get("services") or []]
    if on(settings["ray"]):
        role = view.get("ray_role")
        if role == "ray_head":
            out.append({"name": settings["ray_head_unit"], "kind": "ray"})
        if role == "ray_worker":
            out.append({"name": settings["ray_worker_unit"], "kind": "ray"})
    if on(settings["memory"]) and len(settings["memory_guard_unit"]) > 0:
        out.append({"name": settings["memory_guard_unit"], "kind": "guard"})
    return out


def probe_config(view, settings, fabric_peers, fabric_address=None):
    """The probe's configuration on the host of ``view``: ``settings`` are fleet_health's variables without their
    prefix; ``fabric_peers`` the hosts to ping (``peers``); ``fabric_address`` the host's own (where the head asks
    Ray; the loopback when empty)."""
    config = {
        "textfile_dir": settings["textfile_dir"],
        "textfile_name": TEXTFILE_NAME,
        "timeout": integer(settings["timeout"]),
        "endpoints": endpoints(view, settings["vllm_secrets_dir"]),
        "units": units(view, settings),
        "ray": {},
        "driver": {},
        "kernel": {},
        "memory": {},
        "fabric": {},
    }
    config.update((name, settings[name]) for name in FILES)
    if on(settings["ray"]) and view.get("ray_role") == "ray_head":
        config["ray"] = {"expected_members": len(view["ray"]["members"]),
                         "ray": "%s/bin/ray" % settings["venv_path"],
                         "address": "%s:%s" % (fabric_address or "127.0.0.1", settings["ray_port"]),
                         "token_file": settings["ray_auth_token_file"]}
    if on(settings["driver"]):
        config["driver"] = {"proc_version": settings["proc_driver_version"], "nvidia_smi": settings["nvidia_smi"]}
    if on(settings["kernel"]):
        # The rule book's kernel_updates: the module and headers packages a missing module is fixed with (patterns
        # with {branch} and {kernel}), and the kernels known bad on Sparks.
        config["kernel"] = dict((name, settings[name]) for name in KERNEL_PATHS)
        config["kernel"].update({"module": "nvidia", "branch": rulebook.setting("driver_branch"),
                                 "module_package": rulebook.setting("nvidia_kernel_module_package"),
                                 "headers_package": rulebook.setting("kernel_headers_package"),
                                 "known_bad_kernels": rulebook.setting("known_bad_kernels")})
    if on(settings["memory"]):
        config["memory"] = {"meminfo": settings["proc_meminfo"], "pressure": settings["proc_pressure_memory"]}
    if on(settings["fabric"]):
        config["fabric"] = {"ifname": settings["fabric_ifname"], "mtu": integer(rulebook.setting("fabric_mtu")),
                            "ping_payload": integer(rulebook.setting("jumbo_ping_payload")),
                            "peers": list(fabric_peers or [])}
    return config
