# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The fleet plan: which hosts serve which model, with whom, on which ports.

One computation from the inventory's fleet variables (each host's model entries,
fabric address, Ray group and cluster, executor, Ray ports, vLLM unit prefix:
``PLAN_INPUTS``) to what every stage does with them:

- each multi-node model: its nodes, head (the first node), executor, master address
  and rendezvous port, API port, the head of its Ray cluster (ray executor) and the hosts that must change
  together in a roll (``together``: its nodes, and that Ray head where it is none of them);
- each host's models: every entry it is a node of (whose weights it needs, ray followers
  included), with its rank and role;
- each host's services: model name, unit name, API port, rank, role (head or
  follower) and the cluster layout ``vllm_args`` renders (``--nnodes``, ...);
- each Ray cluster: head, members, GCS port and address.

Preflight (``fleet_preflight``) checks the inventory with these functions and
builds the plan of a fleet it accepts; the ``sparkfleet.gb10.fleet_plan``,
``fleet_services``, ``ray_cluster`` and ``ray_gcs_port`` filters put the same functions in front of
the roles (``vllm_service``, ``fleet_verify``, ``fleet_health``, ``model_store``, ``ray``).
No port number is written here: the model entry's come from its schema
(``model_entry``), Ray's from the ``ray`` role's defaults (``ray_head_ports``),
which an inventory may override on the head.

Pure Python, unit tested on every example inventory (``tests/unit/plugins/module_utils/test_fleet_plan.py``).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
from collections.abc import Mapping

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

from ansible_collections.sparkfleet.gb10.plugins.module_utils.gpu_memory_utilization import gpu_memory_utilization
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import (
    CLUSTER_SPEC, MODEL_ENTRY_SPEC, PLACEMENT_KEYS)

ROLES_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "roles"))
# The role that runs Ray (head or worker); its defaults hold both port maps, ray_head_ports and ray_worker_ports.
RAY_ROLE = "ray"

DEFAULT_PORT = MODEL_ENTRY_SPEC["port"]["default"]
DEFAULT_MASTER_PORT = CLUSTER_SPEC["master_port"]["default"]
DEFAULT_EXECUTOR = CLUSTER_SPEC["executor"]["default"]
DEFAULT_CLUSTER = "default"
# The shape of a stored plan; raised when readers take something new from it (2: services' call_address;
# 3: node_addresses, where a head asks its members to drop their page cache; 4: memory on every plan, store;
# 5: each multi-node model's ray_head and together, the hosts a roll's batch must hold at once).
PLAN_FORMAT = 5
RAY_ROLE_BY_GROUP = (("ray_head", "ray_head"), ("ray_workers", "ray_worker"))


class PlanError(ValueError):
    """The inventory cannot be planned (preflight names the mistake with its fix)."""


class MemoryPlanError(PlanError):
    """The entries of one or more hosts do not fit their memory: ``problems`` is ``[(host, [entry names],
    message)]``, one per such host (preflight names the host's model variable and the fix)."""

    def __init__(self, problems):
        self.problems = list(problems)
        super(MemoryPlanError, self).__init__("; ".join(message for dummy, dummy, message in self.problems))


def load_role_default(role, name, roles_dir=ROLES_DIR):
    """One variable of a role's ``defaults/main.yml`` (None when absent)."""
    path = os.path.join(roles_dir, role, "defaults", "main.yml")
    if not os.path.isfile(path):
        return None
    with open(path) as handle:
        return (yaml.safe_load(handle) or {}).get(name)


# The vLLM unit names' prefix: vllm_service's default (its one home), or the inventory's vllm_service_unit_prefix.
# Read when first wanted, not at import: a module_utils file must import without PyYAML (ansible-test's import test).
@functools.lru_cache(maxsize=None)
def default_unit_prefix():
    """vllm_service's ``vllm_service_unit_prefix`` default."""
    return load_role_default("vllm_service", "vllm_service_unit_prefix")


def __getattr__(name):
    """``DEFAULT_UNIT_PREFIX``, as before, read on first use."""
    if name == "DEFAULT_UNIT_PREFIX":
        return default_unit_prefix()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def unit_prefix_of(host_vars):
    """The prefix of a host's vLLM unit names: its ``vllm_service_unit_prefix`` where the inventory sets it, else
    vllm_service's default; the plan's unit names, and so fleet_health's, follow it."""
    return (host_vars or {}).get("vllm_service_unit_prefix") or default_unit_prefix()


# ------------------------------------------------------------------ one host's view

def models_var(host_vars):
    """The variable a host's models are read from: vllm_service serves vllm_service_models, which
    defaults to sparkfleet_models; an inventory may set it directly."""
    return "vllm_service_models" if "vllm_service_models" in host_vars else "sparkfleet_models"


def executor_var(host_vars):
    """The host's default executor: vllm_service_executor where the inventory sets it (as vllm_service reads it),
    else sparkfleet_executor."""
    return host_vars.get("vllm_service_executor") or host_vars.get("sparkfleet_executor")


def host_models(host_vars):
    """The host's model entries (a list; anything else is preflight's finding)."""
    models = host_vars.get(models_var(host_vars)) or []
    return models if isinstance(models, list) else []


def ray_role(groups):
    """``ray_head``, ``ray_worker`` or None, from the host's groups."""
    for group, role in RAY_ROLE_BY_GROUP:
        if group in (groups or []):
            return role
    return None


def cluster_name(host_vars):
    """The Ray cluster a host belongs to (``sparkfleet_cluster``, else one cluster for the fleet)."""
    return host_vars.get("sparkfleet_cluster") or DEFAULT_CLUSTER


def model_nodes(model, host):
    """The hosts of a model entry (``nodes``; none: this host alone). A ``nodes`` that is not a list
    is a PlanError: preflight's entry check names it."""
    nodes = model.get("nodes")
    if nodes is None or (isinstance(nodes, list) and not nodes):
        return [host]
    if not isinstance(nodes, list):
        raise PlanError("nodes=%r: must be a list of inventory hosts" % (nodes,))
    return nodes


def executor_of(model, executor=None):
    """The entry's executor, else the host's (``sparkfleet_executor``), else the schema's default."""
    return model.get("executor") or executor or DEFAULT_EXECUTOR


def strip_placement(model, extra=()):
    """The entry without its placement keys (what ``vllm_args`` checks and renders)."""
    return dict((k, v) for k, v in model.items() if k not in PLACEMENT_KEYS and k not in extra)


def layout(model, host, executor=None, address_of=None):
    """The cluster layout of one entry on ``host``: ``{nodes, head, rank, executor, nnodes, master_port,
    master_addr, node_addresses, role}``. ``address_of(host)`` gives a node's fabric address (the master address
    of a multi-node model is its first node's; ``node_addresses`` holds each node's, in the order of ``nodes``,
    where the head asks its members to drop their page cache). PlanError when ``host`` is not one of the entry's
    nodes."""
    nodes = model_nodes(model, host)
    if host not in nodes:
        raise PlanError("%s: model %s: this host is not one of its nodes %s" % (host, model.get("name"), nodes))
    rank = nodes.index(host)
    return {
        "nodes": list(nodes),
        "head": nodes[0],
        "rank": rank,
        "role": "head" if rank == 0 else "follower",
        "executor": executor_of(model, executor),
        "nnodes": len(nodes),
        "master_port": model.get("master_port", DEFAULT_MASTER_PORT),
        "master_addr": (address_of(nodes[0]) if address_of else None) if len(nodes) > 1 else None,
        "node_addresses": [address_of(node) if address_of else None for node in nodes] if len(nodes) > 1 else None,
    }


def cluster_args(lay, vllm_bin=None):
    """The ``cluster`` argument of ``vllm_args`` for a layout."""
    cluster = {"executor": lay["executor"], "nnodes": lay["nnodes"], "node_rank": lay["rank"],
               "master_port": lay["master_port"]}
    if vllm_bin:
        cluster["vllm_bin"] = vllm_bin
    if lay["nnodes"] > 1:
        cluster["master_addr"] = lay["master_addr"]
    return cluster


def runs_unit(lay):
    """A host runs a vLLM unit for the entry unless it is a follower of the ray executor (those run
    inside the Ray worker)."""
    return lay["executor"] == "mp" or lay["rank"] == 0


def placements(host, models, executor=None, address_of=None):
    """The entries ``host`` is a node of, in the order written: the models whose weights it needs (a
    follower of the ray executor runs no unit of its own, but loads its share inside the Ray worker).
    Each is its layout with ``name``, ``index`` (its place in the host's list), ``runs_unit``, ``entry``
    (without placement keys and source: what ``vllm_args`` and the memory arithmetic read) and
    ``model`` (as written). An entry a host carries without being one of its nodes is not the host's."""
    out = []
    for index, model in enumerate(models or []):
        if not isinstance(model, dict):
            raise PlanError("%s: a model entry must be a mapping, got %r" % (host, model))
        if host not in model_nodes(model, host):
            continue
        lay = layout(model, host, executor, address_of)
        lay.update({"name": model.get("name"), "index": index, "runs_unit": runs_unit(lay),
                    "entry": strip_placement(model, ("source",)), "model": model})
        out.append(lay)
    return out


# The API's bind addresses that mean every address of the host; the gates then call it on the loopback.
DEFAULT_HOST = MODEL_ENTRY_SPEC["host"]["default"]
WILDCARD_HOSTS = ("0.0.0.0", "::")


def call_address(host):
    """The address the gates on the host (verify's calls, the health probe) call an API bound to ``host`` (the
    entry's ``host``, vLLM's ``--host``) at: the loopback for a wildcard, else that address itself (an API bound to
    one address answers on no other). Preflight refuses a ``host`` that is no address of the host."""
    host = DEFAULT_HOST if host is None else str(host).strip()
    return "127.0.0.1" if host in WILDCARD_HOSTS or not host else host


def served_name(model):
    """The model name clients ask the API for: the entry's ``served_name``, else its ``model``."""
    return model.get("served_name") or model.get("model")


def services(host, models, executor=None, address_of=None, unit_prefix=None, vllm_bin=None):
    """The vLLM services of ``host``: one per entry it takes part in and runs a unit for, each
    ``{name, unit, port, served_name, rank, role, serves_api, call_address, nodes, head, executor, nnodes,
    master_addr, master_port, cluster, entry, model}`` (``entry``: without placement keys; ``model``: as written;
    ``call_address``: where the host's own gates call its API, ``call_address``).
    ``unit_prefix``: None for vllm_service's default."""
    unit_prefix = unit_prefix or default_unit_prefix()
    out = []
    for place in placements(host, models, executor, address_of):
        if not place["runs_unit"]:
            continue
        service = dict((k, v) for k, v in place.items() if k not in ("index", "runs_unit"))
        service.update({
            "unit": "%s%s" % (unit_prefix, place["name"]),
            "port": place["model"].get("port", DEFAULT_PORT),
            "served_name": served_name(place["model"]),
            "serves_api": place["rank"] == 0,
            "call_address": call_address(place["model"].get("host")),
            "cluster": cluster_args(place, vllm_bin),
        })
        out.append(service)
    return out


def stored_services(plan, host, unit_prefix=None, vllm_bin=None):
    """``host``'s services out of a stored plan (the one preflight built and stored this run), with a role's
    unit prefix (None: the plan's unit names) and vLLM path; None when there is no plan or it does not cover
    ``host`` (a role used alone plans from its own variables then)."""
    view = ((plan or {}).get("hosts") or {}).get(host)
    if view is None:
        return None
    out = []
    for service in view["services"]:
        service = dict(service)
        if unit_prefix:
            service["unit"] = "%s%s" % (unit_prefix, service["name"])
        service["cluster"] = cluster_args(service, vllm_bin)
        out.append(service)
    return out


def covers(plan, hosts, inputs=None):
    """Whether a stored plan is of this collection's plan format and covers every one of ``hosts`` (a plan an
    older release stored in a persistent fact cache lacks what readers now take from it, so it is planned again),
    and, with ``inputs`` (``inputs_digest`` of the hosts' variables now), was built from the same variables (a play
    that set a host's models with set_fact after the plan was stored gets a new one)."""
    return (bool(plan) and plan.get("format") == PLAN_FORMAT and set(hosts) <= set(plan.get("hosts") or {})
            and (inputs is None or plan.get("inputs") == inputs))


def inputs_digest(fleet):
    """A digest of the plan's inputs ``{host: plan_inputs}`` (the layout variables; facts left out: a refreshed
    fact does not move a model), stored in the plan as ``inputs``."""
    layout = dict((host, dict((k, v) for k, v in (fleet[host] or {}).items() if k in PLAN_INPUTS)) for host in fleet)
    text = json.dumps(plain_data(layout), sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ------------------------------------------------------------------ Ray

def default_ray_ports(role, roles_dir=ROLES_DIR):
    """The ray role's default port map of a ``ray_head`` or a ``ray_worker`` (``{}`` when it has none)."""
    return load_role_default(RAY_ROLE, role + "_ports", roles_dir) or {}


def ray_ports(role, host_vars=None, roles_dir=ROLES_DIR):
    """The Ray port map of a host in ``role`` (``ray_head`` or ``ray_worker``): the ray role's default
    ``<role>_ports`` (``defaults/main.yml``) with the inventory's ``<role>_ports`` merged over it key by key, so an
    inventory moves one port by naming that port alone. A key the default does not have is no Ray port (preflight
    and the role's own checks refuse it, with the key meant)."""
    ports = dict(default_ray_ports(role, roles_dir))
    own = (host_vars or {}).get(role + "_ports")
    if isinstance(own, dict):
        ports.update((key, value) for key, value in own.items() if key in ports)
    return ports


def head_port(name, head_vars=None, roles_dir=ROLES_DIR):
    """One port of a Ray head, ``ray_head_ports[name]`` (the inventory's map on the head, else the
    ray role's default); None when the map has no such port."""
    port = ray_ports("ray_head", head_vars, roles_dir).get(name)
    if isinstance(port, str) and port.strip().isdigit():
        port = int(port)
    return port


def gcs_port(head_vars=None, roles_dir=ROLES_DIR):
    """The GCS port of a Ray cluster: ``ray_head_ports.gcs`` of its head. Workers, the vLLM ray
    executor and verify all take it from here."""
    return head_port("gcs", head_vars, roles_dir)


def ray_clusters(fleet, roles_dir=ROLES_DIR):
    """``{cluster: {members, head, workers, gcs_port, dashboard_port, address}}`` of the hosts in group ray_head or
    ray_workers. The head is the cluster's host of group ray_head (None unless exactly one)."""
    clusters = {}
    for host in sorted(fleet):
        host_vars = fleet[host]
        role = ray_role(host_vars.get("group_names"))
        if role is None:
            continue
        clusters.setdefault(cluster_name(host_vars), []).append((host, role))
    out = {}
    for name, members in sorted(clusters.items()):
        heads = [h for h, role in members if role == "ray_head"]
        head = heads[0] if len(heads) == 1 else None
        port = gcs_port(fleet[head], roles_dir) if head else None
        address = fleet[head].get("sparkfleet_fabric_address") if head else None
        out[name] = {
            "members": [h for h, _role in members],
            "head": head,
            "workers": [h for h, role in members if role == "ray_worker"],
            "gcs_port": port,
            "dashboard_port": head_port("dashboard", fleet[head], roles_dir) if head else None,
            "address": "%s:%s" % (address, port) if head and address else None,
        }
    return out


def named_ray_head(fleet, host, roles_dir=ROLES_DIR):
    """The Ray head a host in no Ray group names with ``sparkfleet_ray_head_host`` (a Ray role or the ray executor
    run on its own, outside groups ray_head/ray_workers): ``{members, head, workers, gcs_port, dashboard_port,
    address}`` like a cluster of ``ray_clusters``, of the head and this host; None when it names no host of
    ``fleet``. In an inventory preflight accepts, the named head is the head of the host's cluster anyway."""
    head = fleet[host].get("sparkfleet_ray_head_host")
    if not isinstance(head, str) or head not in fleet:
        return None
    port = gcs_port(fleet[head], roles_dir)
    address = fleet[head].get("sparkfleet_fabric_address")
    return {
        "members": sorted(set([head, host])),
        "head": head,
        "workers": [] if host == head else [host],
        "gcs_port": port,
        "dashboard_port": head_port("dashboard", fleet[head], roles_dir),
        "address": "%s:%s" % (address, port) if address else None,
    }


def store_of(view):
    """The placements whose weights the model store keeps on a host, from its part of the plan: the host's own
    ``model_store_models`` where it sets one (``store``), else the entries it is a node of (``models``)."""
    return list(view["store"] if "store" in view else view.get("models") or [])


def host_view(plan, host, unit_prefix=None, vllm_bin=None):
    """What one host does in the fleet plan, the one view every role and playbook reads
    (filter ``sparkfleet.gb10.fleet_host``):

    ``{name, fabric_address, models, store, services, endpoints, ray_role, ray}``: the entries it is a node of
    (``models``), those whose weights the model store keeps on it (``store``: ``models``, or the placements of the
    host's ``model_store_models`` where it sets one), the vLLM units it runs (``services``, with ``unit_prefix``'s unit names and ``vllm_bin`` in
    their ``cluster`` where given), those of them that serve the API (``endpoints``), its Ray role
    (``ray_head``, ``ray_worker`` or None) and its Ray cluster (``ray``: ``members``, ``head``, ``workers``,
    ``gcs_port``, ``dashboard_port``, ``address``; ``{}`` for a host in none).

    PlanError when there is no plan or it does not hold ``host``: the plan is built before any reader runs
    (by preflight, or by the role sparkfleet.gb10.plan for a role run on its own)."""
    hosts = (plan or {}).get("hosts") if isinstance(plan, dict) else None
    if not hosts:
        raise PlanError("no fleet plan: run playbooks/preflight.yml first, or the role sparkfleet.gb10.plan "
                        "before a role run on its own (a dependency of every role that reads the plan)")
    if host not in hosts:
        raise PlanError("%s is not in the fleet plan (it plans %s): run the role sparkfleet.gb10.plan in a play "
                        "that holds this host" % (host, ", ".join(sorted(hosts))))
    mine = hosts[host]
    own = stored_services(plan, host, unit_prefix, vllm_bin)
    ray = (plan.get("ray") or {}).get(mine.get("ray_cluster")) if mine.get("ray_cluster") else mine.get("ray_head")
    return {
        "name": host,
        "fabric_address": mine.get("fabric_address"),
        "models": list(mine.get("models") or []),
        "store": store_of(mine),
        "services": own,
        "endpoints": [s for s in own if s["serves_api"]],
        "ray_role": mine.get("ray_role"),
        "ray": dict(ray or {}),
    }


# ------------------------------------------------------------------ the whole fleet

# Where a node's fabric address is read from, the first one set wins.
ADDRESS_INPUTS = ("vllm_service_node_ip", "sparkfleet_fabric_address")


def fleet_address_of(fleet):
    """A node's fabric address as the roles read it: ``vllm_service_node_ip`` where the inventory sets
    it, else ``sparkfleet_fabric_address``."""
    def address_of(host):
        host_vars = fleet.get(host) or {}
        for name in ADDRESS_INPUTS:
            if name in host_vars:
                return host_vars[name]
        return None
    return address_of


def build(fleet, roles_dir=ROLES_DIR, memory_split=None):
    """The plan of ``{host: hostvars}`` (each host's ``plan_inputs``):

    ``{"format": PLAN_FORMAT, "inputs": inputs_digest(fleet),
       "hosts": {host: {models, services, ray_role, ray_cluster, fabric_address, memory,
       store (where the host sets model_store_models: the placements of that list)}},
       "models": [{name, nodes, head, executor, master_addr, master_port, port, ray_head, together}] (multi-node
       models; ``ray_head``: the head of the Ray cluster a ray-executor model runs on, else None; ``together``: the
       hosts a roll must change at once, ``together_hosts``),
       "ray": {cluster: {members, head, workers, gcs_port, dashboard_port, address}}}``.

    The one builder of the plan, whoever asks (preflight, a role run on its own): each host's memory arithmetic
    (``plan_memory``) is part of it wherever the host's facts were gathered, so a model entry runs with the same
    ``gpu_memory_utilization`` under site.yml and under its role alone.

    Raises PlanError for an inventory that cannot be planned: an entry that is not a mapping, nodes
    that are not inventory hosts, a multi-node model whose members do not all carry it, a Ray cluster
    without exactly one head; MemoryPlanError for entries that do not fit their host's memory. Preflight reports
    those (and more) with their fixes first.
    """
    address_of = fleet_address_of(fleet)
    plan = {"format": PLAN_FORMAT, "hosts": {}, "models": [], "ray": ray_clusters(fleet, roles_dir),
            "inputs": inputs_digest(fleet)}
    for name, ray in sorted(plan["ray"].items()):
        if ray["head"] is None:
            raise PlanError("Ray cluster '%s' (%s) needs exactly one host in group ray_head"
                            % (name, ", ".join(ray["members"])))
    for host in sorted(fleet):
        host_vars = fleet[host]
        executor = executor_var(host_vars)
        for model in host_models(host_vars):
            if isinstance(model, dict):
                unknown = [n for n in model_nodes(model, host) if n not in fleet]
                if unknown:
                    raise PlanError("%s: model %s: nodes %s are not in the inventory" % (
                        host, model.get("name"), ", ".join(map(str, unknown))))
        role = ray_role(host_vars.get("group_names"))
        plan["hosts"][host] = {
            "models": placements(host, host_models(host_vars), executor, address_of),
            "services": services(host, host_models(host_vars), executor, address_of, unit_prefix_of(host_vars)),
            "ray_role": role,
            "ray_cluster": cluster_name(host_vars) if role else None,
            "fabric_address": host_vars.get("sparkfleet_fabric_address"),
        }
        named = named_ray_head(fleet, host, roles_dir) if role is None else None
        if named:
            plan["hosts"][host]["ray_head"] = named
        if STORE_INPUT in host_vars:
            # The model store's own list, where the host sets one: the entries whose weights it holds instead.
            plan["hosts"][host]["store"] = placements(host, host_vars[STORE_INPUT] or [], executor, address_of)
    for host in sorted(fleet):
        for service in plan["hosts"][host]["services"]:
            if service["rank"] != 0 or service["nnodes"] < 2:
                continue
            for member in service["nodes"][1:]:
                if not any(m.get("name") == service["name"] for m in host_models(fleet[member])
                           if isinstance(m, dict)):
                    raise PlanError("model %s spans %s but %s does not carry it" % (
                        service["name"], ", ".join(service["nodes"]), member))
            ray_head = None
            if service["executor"] == "ray":
                ray = plan["ray"].get(cluster_name(fleet[host]))
                if not ray or not set(service["nodes"]) <= set(ray["members"]):
                    raise PlanError("model %s uses the ray executor on %s, which are not one Ray cluster" % (
                        service["name"], ", ".join(service["nodes"])))
                ray_head = ray["head"]
            model = dict((k, service[k]) for k in (
                "name", "nodes", "head", "executor", "master_addr", "master_port", "port"))
            model.update(ray_head=ray_head, together=together_hosts(service["nodes"], ray_head))
            plan["models"].append(model)
    problems = plan_memory(plan, fleet, memory_split or split_memory)
    if problems:
        raise MemoryPlanError(problems)
    return plan


# ------------------------------------------------------------------ rolls

def together_hosts(nodes, ray_head=None):
    """The hosts a roll (playbooks/rolling_update.yml, os_update.yml) must change at once for one multi-node model:
    its nodes in their order, then the head of its Ray cluster where that is none of them. The ray executor runs on
    the cluster of the model's first node, whose head holds the GCS every node of the model joins: a batch that
    drains or reboots that head without the model (or the model without it, leaving Ray's versions apart) takes
    the model down mid-roll."""
    return list(nodes) + ([ray_head] if ray_head and ray_head not in nodes else [])


def plan_models(plan):
    """The multi-node models of a stored plan (``[]`` for none or no plan); PlanError for a plan of another
    format (one stored before ``together``), which preflight plans again."""
    if not plan:
        return []
    if not isinstance(plan, Mapping) or plan.get("format") != PLAN_FORMAT:
        raise PlanError("the fleet plan is not of this collection's format %d (found %r): run playbooks/preflight.yml "
                        "in the same run, it plans the fleet again" % (
                            PLAN_FORMAT, plan.get("format") if isinstance(plan, Mapping) else plan))
    return list(plan.get("models") or [])


def roll_groups(plan):
    """The groups of hosts a roll must put into one batch: each multi-node model's ``together``, merged where two
    share a host (a host is in one batch, so both models' hosts are). Hosts and groups in the order they first
    appear in the plan's models; a host of no multi-node model is in none."""
    order, parent = [], {}

    def root(host):
        while parent[host] != host:
            host = parent[host]
        return host

    for model in plan_models(plan):
        together = model["together"]
        for host in together:
            if host not in parent:
                parent[host] = host
                order.append(host)
        for host in together[1:]:
            parent[root(host)] = root(together[0])
    groups = {}
    for host in order:
        groups.setdefault(root(host), []).append(host)
    return list(groups.values())


def roll_serial(plan):
    """A roll's default batch size: the largest of ``roll_groups`` (its hosts must change together), else one."""
    return max([1] + [len(group) for group in roll_groups(plan)])


def roll_batches(hosts, serial):
    """The batches Ansible makes of a play's ``hosts`` (in order) with ``serial: <serial>``: ``serial`` hosts at a
    time, the last batch what is left; all hosts in one batch for a serial of 0 or less (as Ansible does)."""
    hosts, serial = list(hosts or []), int(serial)
    if serial <= 0:
        return [hosts] if hosts else []
    return [hosts[start:start + serial] for start in range(0, len(hosts), serial)]


def roll_batch_problems(plan, hosts, serial):
    """What each batch of a roll splits: ``{host: {batch, models, message}}`` of every host of ``hosts`` (the play's,
    in order) whose batch (``roll_batches``) lacks a host that must change with it (``together`` of a multi-node
    model of the host: its nodes, the Ray head of a ray-executor model). ``models``: ``[{name, together, missing,
    ray_head}]`` (``missing``: the hosts the batch lacks; ``ray_head``: the model's Ray head where it is none of the
    model's nodes, else None); ``message``: the refusal, naming the host, the models, what each misses (the Ray head
    as such), the batch and the fixes. ``{}`` when no batch splits a model. The plan is the whole fleet's: a host
    outside ``hosts`` (--limit) that must change with one inside splits its model too."""
    models = plan_models(plan)
    groups = roll_groups(plan)
    out = {}
    for batch in roll_batches(hosts, serial):
        for host in batch:
            split = []
            for model in models:
                if host not in model["together"]:
                    continue
                missing = [h for h in model["together"] if h not in batch]
                if missing:
                    head = model.get("ray_head")
                    split.append({"name": model["name"], "together": list(model["together"]), "missing": missing,
                                  "ray_head": head if head and head not in model["nodes"] else None})
            if split:
                group = next((g for g in groups if host in g), [host])
                out[host] = {"batch": list(batch), "models": split, "message": batch_refusal(host, batch, split, group)}
    return out


def batch_refusal(host, batch, split, group):
    """The refusal of a batch that splits models (``split``, as ``roll_batch_problems`` gives them) of ``host``;
    ``group``: the hosts that must change with it (its ``roll_groups`` group)."""
    needs = []
    for model in split:
        head = model["ray_head"]
        parts = [", ".join(h for h in model["missing"] if h != head)] if set(model["missing"]) - set([head]) else []
        if head in model["missing"]:
            parts.append("%s, the head of its Ray cluster (the ray executor runs on it)" % head)
        text = "%s needs %s" % (model["name"], " and ".join(parts))
        if head == host:
            text += " (this host is the head of its Ray cluster, which the ray executor runs on)"
        needs.append(text)
    heads = sorted(set(model["ray_head"] for model in split if model["ray_head"]))
    return ("%s: model(s) %s span hosts outside this batch (%s): %s; their members%s must change together. Set "
            "sparkfleet_rolling_serial to the size of the cluster (e.g. -e sparkfleet_rolling_serial=%d), list the "
            "cluster's hosts (%s) next to each other in the inventory, or --limit the roll to the cluster's hosts%s." % (
                host, ", ".join(model["name"] for model in split), ", ".join(batch), "; ".join(needs),
                " and Ray head" if heads else "", len(group), ", ".join(group),
                ", its Ray head %s included" % ", ".join(heads) if heads else ""))


# The keys that size a model entry's KV cache; with weights_gib or params_b, what the memory arithmetic needs.
SIZING_KEYS = ("num_layers", "num_kv_heads", "head_dim", "max_model_len")


def sized(entry, weights_known=()):
    """Whether the memory arithmetic can size ``entry``: its weights (weights_gib or params_b, or its name among
    ``weights_known``, the entries whose weights on disk the model store measured) and its KV cache."""
    return bool((entry.get("weights_gib") or entry.get("params_b") or entry.get("name") in weights_known)
                and all(entry.get(k) for k in SIZING_KEYS))


def memory_sizable(gb10, entries, weights_known=()):
    """Whether one host's memory arithmetic can be done: its facts know its memory, it holds entries, and each is
    ``sized``."""
    memory = (gb10 or {}).get("memory") or {}
    entries = list(entries or [])
    return bool(int(memory.get("mem_total_bytes") or 0) > 0 and entries
                and all(sized(entry, weights_known) for entry in entries))


def split_memory(gb10, entries, host):
    """The memory arithmetic of the entries one host holds, from its gb10 facts (``gpu_memory_utilization``)."""
    return gpu_memory_utilization(gb10, entries, host=host)


def split_once(memory_split=split_memory):
    """``memory_split`` asked once per host and entries (the same entries with or without their ``source``):
    preflight judges a host's arithmetic and the plan it then builds carries that same result, computed once. A
    split that raised raises the same error again."""
    seen = {}

    def once(gb10, entries, host):
        key = json.dumps([host, gb10, [strip_placement(entry, ("source",)) for entry in entries]], sort_keys=True,
                         default=str)
        if key not in seen:
            try:
                seen[key] = (memory_split(gb10, entries, host), None)
            except Exception as exc:  # pylint: disable=broad-except
                seen[key] = (None, exc)
        result, error = seen[key]
        if error is not None:
            raise error
        return copy.deepcopy(result)
    return once


def plan_memory(plan, fleet, memory_split=split_memory):
    """Adds each planned host's memory arithmetic to ``plan`` (``hosts[host].memory``): ``memory_split`` (the
    gpu_memory_utilization split) of the entries the host holds, from its facts (``plan_inputs``' ``gb10``). None
    where the facts were not gathered (a host outside --limit), the host holds nothing, or an entry is not sized
    (preflight then checks the sum of the utilizations against the ceiling instead). Where there is an
    arithmetic, each of the host's services without a ``gpu_memory_utilization`` of its own is given the share
    it computed (``plan_utilization``), so the units run with what was checked: two models on one Spark
    share the budget instead of each taking the rule book's default. Returns ``[(host, [entry names], message)]``
    of the hosts whose entries do not fit."""
    problems = []
    for host, view in sorted(plan["hosts"].items()):
        gb10 = (fleet.get(host) or {}).get("gb10") or {}
        entries = [model["entry"] for model in view["models"]]
        view["memory"] = None
        if gb10.get("memory") and entries and all(sized(entry) for entry in entries):
            try:
                view["memory"] = memory_split(gb10, entries, host)
            except Exception as exc:  # pylint: disable=broad-except
                problems.append((host, [entry.get("name") for entry in entries], str(exc)))
        plan_utilization(view)
    return problems


def plan_utilization(view):
    """Gives each entry of one host's plan view (its ``models`` and ``services``) the utilization its memory
    arithmetic (``view["memory"]``) computed, where the entry has none of its own; nothing without one."""
    shares = dict((name, item["utilization"]) for name, item in ((view.get("memory") or {}).get("services") or {}).items()
                  if not item.get("explicit"))
    for item in list(view.get("models") or []) + list(view.get("services") or []):
        entry = item.get("entry") or {}
        if entry.get("gpu_memory_utilization") is None and entry.get("name") in shares:
            item["entry"] = dict(entry, gpu_memory_utilization=shares[entry["name"]])


def plain_data(value):
    """``value`` as plain dicts, lists, strings and numbers. The plan is built from inventory values, which
    ansible-core 2.19 carries as tagged types (a string with the file and line it came from). A persistent fact
    cache (jsonfile, ansible-runner's default) stores each tag with its string and decodes them all again on every
    read of the host's variables: with the plan's tags, a no-op rerun of site.yml with that cache took 99 s, without
    them 59-61 s (68 s with the memory cache at the time), most of the difference spent decoding tags."""
    if isinstance(value, Mapping):
        return dict((plain_data(key), plain_data(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [plain_data(item) for item in value]
    if isinstance(value, bool):
        return bool(value)
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    return value


# The model store's own list of entries (role model_store): where a host sets it, the plan's ``store`` of the host.
STORE_INPUT = "model_store_models"
# The variables of a host the plan reads (a filter copies only these out of hostvars).
PLAN_INPUTS = ("group_names", "sparkfleet_models", "vllm_service_models", "sparkfleet_cluster", "sparkfleet_executor",
               "sparkfleet_fabric_address", "vllm_service_node_ip", "ray_head_ports", "ray_worker_ports",
               "vllm_service_unit_prefix", "sparkfleet_ray_head_host", "vllm_service_executor", STORE_INPUT)


def plan_inputs(host_vars, models_var=None):
    """The plan's inputs out of one host's variables (a mapping such as Ansible's hostvars[host]), with the host's
    gb10 facts (``gb10``, where they were gathered) for the memory arithmetic.
    ``models_var``: a role's own list of entries (``model_store_models``) that, where the host sets it,
    stands for the entries vllm_service serves."""
    inputs = dict((name, host_vars[name]) for name in PLAN_INPUTS if name in host_vars)
    facts = host_vars.get("ansible_facts") if "ansible_facts" in host_vars else None
    if hasattr(facts, "get") and facts.get("gb10"):
        inputs["gb10"] = facts["gb10"]
    if models_var and models_var in host_vars:
        inputs["vllm_service_models"] = host_vars[models_var]
    return inputs
