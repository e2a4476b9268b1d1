# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the roles that check or drain a host read from its part of the fleet plan (``fleet_plan.host_view``, filter
``fleet_host``): the endpoints its gates call (fleet_verify), the units that load NCCL (fleet_verify), the order
the drain of an OS update stops its units in (os_update), and the retry timers its vLLM units name, read from
systemd (os_update).

Filters ``plan_endpoints``, ``plan_nccl_units``, ``drain_phases``, ``drain_retry_reads`` and ``drain_retry_timers``.

Pure Python, standard library only.
"""

from __future__ import annotations

import re

# The drain's phases, stopped one after the other across the batch (os_update's tasks/drain.yml) as a cluster comes
# apart cleanly, started again in the reverse order (tasks/start.yml).
DRAIN_PHASES = ("vLLM followers", "vLLM heads", "Ray worker", "Ray head")
ON_FAILURE = "OnFailure="
TIMER = re.compile(r".+[.]timer$")


def ray_units(view, head_unit, worker_unit):
    """The host's Ray unit, ``[head_unit]`` on a Ray head, ``[worker_unit]`` on a worker; ``[]`` on a host in no
    Ray group."""
    role = view.get("ray_role")
    return [head_unit] if role == "ray_head" else [worker_unit] if role == "ray_worker" else []


def endpoints(view):
    """The endpoints the host serves (its own models, and multi-node models whose first node it is; the others only
    join): each the model entry as written, with the API's ``port``, the ``served_name`` clients ask for and the
    ``call_address`` the host's gates call it at, as the plan gives them."""
    return [dict(service["model"], port=service["port"], served_name=service["served_name"],
                 call_address=service["call_address"])
            for service in view.get("endpoints") or []]


def nccl_units(view, head_unit, worker_unit):
    """The units of the host that load NCCL, as systemd names them: its Ray unit (head or worker) and its vLLM
    units (the health probe's service and the head watch units load none)."""
    names = ray_units(view, head_unit, worker_unit) + [s["unit"] for s in view.get("services") or []]
    return [name + ".service" for name in names]


def drain_phases(view, head_unit, worker_unit):
    """The host's units in the drain's phases (``DRAIN_PHASES``): the vLLM followers, the vLLM heads, its Ray
    worker, its Ray head; each phase a list of unit names (without ``.service``), empty where the host has none."""
    services = view.get("services") or []
    role = view.get("ray_role")
    return [[s["unit"] for s in services if s.get("role") != "head"],
            [s["unit"] for s in services if s.get("role") == "head"],
            [worker_unit] if role == "ray_worker" else [],
            [head_unit] if role == "ray_head" else []]


def retry_reads(vllm_units):
    """The ``host_read`` commands that find the retry timers of ``vllm_units`` (their ``OnFailure=``, as
    sparkfleet.gb10.vllm_service writes it) and the timers active now: ``on_failure``, ``active_timers``."""
    return [{"name": "on_failure",
             "argv": ["systemctl", "show", "--property=OnFailure"] + [unit + ".service" for unit in vllm_units]},
            {"name": "active_timers",
             "argv": ["systemctl", "list-units", "--plain", "--no-legend", "--type=timer", "--state=active"]}]


def _lines(read, name):
    commands = (read or {}).get("commands") or {}
    return (commands.get(name) or {}).get("stdout_lines") or []


def retry_timers(read):
    """The timers the vLLM units name in their ``OnFailure=`` that are active now, from the answer of
    ``retry_reads`` (a ``host_read`` result; none from a read skipped or not made), each once, in the units'
    order."""
    named = [name for line in _lines(read, "on_failure") if line.startswith(ON_FAILURE)
             for name in line[len(ON_FAILURE):].split() if TIMER.match(name)]
    active = [line.split()[0] for line in _lines(read, "active_timers") if line.split()]
    out = []
    for name in named:
        if name in active and name not in out:
            out.append(name)
    return out
