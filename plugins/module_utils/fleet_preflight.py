# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Whole-inventory checks that run before anything changes.

Each check returns a list of :class:`Finding`: the host, the variable, the value
and the fix. The ``sparkfleet.gb10.fleet_preflight`` action runs every check and
reports all findings together, never only the first one.

Pure Python apart from Ansible's argument-spec validator, so the checks are unit
tested directly.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import re

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.sparkfleet.gb10.plugins.module_utils import (
    fabric_firewall, fabric_subnet, fleet_plan, gpu_gate, redaction, role_settings, rulebook)
from ansible_collections.sparkfleet.gb10.plugins.module_utils import nccl_env as nccl_env_util
from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import (
    FLEET_DEFAULTS, fleet_default, fleet_value, inventory_variable)
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import (
    MAXIMUM, MINIMUM, MODEL_ENTRY_SPEC, SECRET_SHOWN, api_key_optout, is_secret)
from ansible_collections.sparkfleet.gb10.plugins.module_utils.gpu_memory_utilization import weights_shortfall
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_store import check_source


class Finding(object):
    """One problem of the inventory or of a host, with the fix."""

    __slots__ = ("host", "variable", "value", "problem", "fix")

    def __init__(self, host, variable, value, problem, fix):
        self.host = host
        self.variable = variable
        self.value = value
        self.problem = problem
        self.fix = fix

    def as_dict(self):
        return {
            "host": self.host,
            "variable": self.variable,
            "value": self.value,
            "problem": self.problem,
            "fix": self.fix,
        }

    def __str__(self):
        return "%s: %s=%r: %s. Fix: %s" % (self.host, self.variable, self.value, self.problem, self.fix)

    def __repr__(self):
        return "Finding(%s)" % self


def load_role_specs(roles_dir):
    """Return ``{role: {option: spec}}`` from every ``roles/*/meta/argument_specs.yml``."""
    specs = {}
    if not os.path.isdir(roles_dir):
        return specs
    for role in sorted(os.listdir(roles_dir)):
        path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
        if not os.path.isfile(path):
            continue
        with open(path) as handle:
            data = yaml.safe_load(handle) or {}
        options = {}
        for entry in (data.get("argument_specs") or {}).values():
            options.update((entry or {}).get("options") or {})
        specs[role] = options
    return specs


def _strip_required(spec):
    """A copy of an option spec that checks type/choices only (defaults apply later)."""
    spec = dict(spec)
    spec.pop("required", None)
    spec.pop("default", None)
    spec.pop("description", None)
    spec.pop("version_added", None)
    if isinstance(spec.get("options"), dict):
        spec["options"] = dict((k, _strip_required(v)) for k, v in spec["options"].items())
    return spec


# Variables checked item by item elsewhere, once they are of the right type.
DEEPER = ("sparkfleet_models", "vllm_service_models")


def check_variable_types(host, host_vars, role_specs):
    """Type, choices and sub-option checks of every role variable the inventory sets."""
    findings = []
    reported = set()
    for role, options in sorted(role_specs.items()):
        for name, spec in sorted(options.items()):
            if name not in host_vars or name in reported:
                continue  # a variable several roles read (and document) is reported once
            value = host_vars[name]
            if name in DEEPER and isinstance(value, list):
                continue  # a list: check_models checks every entry, with the schema
            messages = []
            if spec.get("type", "str") in ("str", "path") and isinstance(value, float):
                # 580.10 unquoted is the number 580.1: Ansible would turn it into the text '580.1'.
                messages.append("must be a string, got the number %r (YAML reads unquoted digits with a dot as a "
                                "number and drops trailing zeros): quote it" % value)
            elif spec.get("type", "str") in ("str", "path") and isinstance(value, str) and value.startswith("~") \
                    and (spec.get("type") == "path" or name.endswith(("_path", "_dir", "_file"))):
                messages.append("starts with '~': the path type expands it on the controller (its user's home), "
                                "and systemd never expands it on the host; write the absolute path on the host")
            elif spec.get("type", "str") in ("str", "path") and isinstance(value, (dict, list, bool)):
                # Ansible would quietly turn a mapping, a list or a boolean (yes/no/on/off/true written
                # unquoted) into its text, and the role would use that.
                messages.append("must be a string, got %s" % (
                    "a mapping" if isinstance(value, dict) else "a list" if isinstance(value, list) else
                    "the boolean %s (YAML reads an unquoted yes/no/on/off/true/false as one)" % value))
            else:
                validator = ArgumentSpecValidator({name: _strip_required(spec)})
                messages = validator.validate({name: value}).error_messages
            if messages:
                reported.add(name)
            shown = SECRET_SHOWN if spec.get("no_log") else value  # a secret is never printed
            for message in messages:
                if shown is SECRET_SHOWN:
                    message = message.replace(repr(value), SECRET_SHOWN).replace(str(value), SECRET_SHOWN)
                findings.append(Finding(
                    host, name, shown, message,
                    "set %s as roles/%s/meta/argument_specs.yml describes it (type %s%s)" % (
                        name, role, spec.get("type", "str"),
                        ", one of %s" % ", ".join(str(c) for c in spec["choices"]) if spec.get("choices") else ""),
                ))
    return findings


def known_prefixes(role_specs, extra=("sparkfleet_",)):
    """Variable prefixes owned by this collection: one per role, plus the fleet-wide one."""
    return tuple(sorted(set(["%s_" % role for role in role_specs] + list(extra))))


def check_unknown_variables(host, host_vars, role_specs, prefixes=None):
    """Misspelt or unknown variables that carry one of our prefixes."""
    known = set()
    secret = set()
    for options in role_specs.values():
        known.update(options)
        secret.update(name for name, spec in options.items() if (spec or {}).get("no_log"))
    prefixes = prefixes or known_prefixes(role_specs)
    findings = []
    for name in sorted(host_vars):
        if name in known or name.startswith("_") or not name.startswith(prefixes):
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        fix = ("did you mean %s?" % close[0]) if close else (
            "remove it; the variables this collection reads are listed in roles/*/meta/argument_specs.yml")
        # A misspelt secret is a secret, and so is an unknown variable named like one (sparkfleet_hf_token).
        shown = SECRET_SHOWN if (close and close[0] in secret) or is_secret(name) else host_vars[name]
        findings.append(Finding(host, name, shown, "unknown variable: no role of sparkfleet.gb10 reads it", fix))
    return findings


# The fleet plan reads the models, Ray heads, workers and clusters; preflight checks what it reads.
_models_var = fleet_plan.models_var
_models = fleet_plan.host_models
_entry = fleet_plan.strip_placement
_cluster_of = fleet_plan.cluster_name


def _var(host_vars, index, model, key=None):
    name = "%s[%d]" % (_models_var(host_vars), index)
    if isinstance(model, dict) and model.get("name"):
        name += " (%s)" % model["name"]
    return name + ("." + key if key else "")


def check_fabric(fleet, subnet_default=None):
    """Every host has a fabric address, a bare IPv4 address (Ray, vLLM and NCCL take it as is)
    inside a valid fabric subnet, and no two hosts share one."""
    import netaddr
    findings = []
    seen = {}
    bad_subnets = {}
    nets = {}
    for host in sorted(fleet):
        host_vars = fleet[host]
        address = host_vars.get("sparkfleet_fabric_address")
        subnet = host_vars.get("sparkfleet_fabric_subnet") or subnet_default
        if isinstance(address, (int, float)) and not isinstance(address, bool):
            # YAML read it as a number (Ansible would render that number); a mapping, list or bool is
            # check_variable_types' finding
            findings.append(Finding(host, "sparkfleet_fabric_address", address, "not an IPv4 address (a number)",
                                    "write it as a.b.c.d inside sparkfleet_fabric_subnet"))
            continue
        if not isinstance(address, (str, type(None))) or not isinstance(subnet, (str, type(None))):
            continue  # not text: check_variable_types names it
        net = None
        if subnet:
            try:
                net = netaddr.IPNetwork(subnet, version=4)
                if "/" not in subnet:
                    raise ValueError("no prefix length")
            except (TypeError, ValueError, netaddr.AddrFormatError):
                bad_subnets.setdefault(subnet, []).append(host)
                net = None
        if net is not None:
            nets.setdefault(str(net.cidr), (net, []))[1].append(host)
            management = ((host_vars.get("ansible_facts") or {}).get("gb10") or {}).get("management") or {}
            mgmt_ip = management.get("ipv4")
            if mgmt_ip and netaddr.valid_ipv4(str(mgmt_ip)) and netaddr.IPAddress(mgmt_ip) in net:
                findings.append(Finding(host, "sparkfleet_fabric_subnet", subnet,
                                        "holds this host's management address %s (%s): the fabric route would take "
                                        "the management traffic" % (mgmt_ip, ", ".join(management.get("devs") or [])),
                                        "pick a fabric subnet apart from the management network, e.g. 192.168.100.0/24"))
        if not address:
            findings.append(Finding(host, "sparkfleet_fabric_address", address, "no fabric address",
                                    "give every Spark its own address inside sparkfleet_fabric_subnet in host_vars"))
            continue
        if "/" in address:
            findings.append(Finding(host, "sparkfleet_fabric_address", address,
                                    "written with a prefix length; Ray, vLLM and NCCL take the address as it is",
                                    "write the bare address %s (the prefix comes from sparkfleet_fabric_subnet)"
                                    % address.split("/")[0]))
            continue
        try:
            ip = netaddr.IPAddress(address, version=4, flags=netaddr.INET_PTON)
        except (TypeError, ValueError, netaddr.AddrFormatError):
            findings.append(Finding(host, "sparkfleet_fabric_address", address, "not an IPv4 address",
                                    "write it as a.b.c.d inside sparkfleet_fabric_subnet"))
            continue
        if net is not None and ip not in net:
            findings.append(Finding(host, "sparkfleet_fabric_address", address, "outside the fabric subnet %s" % subnet,
                                    "pick an address inside %s" % subnet))
        elif net is not None and net.size > 2 and ip in (net.network, net.broadcast):
            findings.append(Finding(host, "sparkfleet_fabric_address", address,
                                    "is the network or broadcast address of %s" % subnet, "pick a host address"))
        key = str(ip)
        if key in seen:
            findings.append(Finding(host, "sparkfleet_fabric_address", address, "also used by %s" % seen[key],
                                    "give each Spark its own fabric address"))
        seen.setdefault(key, host)
    for subnet, hosts in sorted(bad_subnets.items()):
        findings.append(Finding(", ".join(hosts), "sparkfleet_fabric_subnet", subnet, "not an IPv4 subnet a.b.c.d/nn",
                                "write it as network/prefix, e.g. 192.168.100.0/24"))
    # Hosts of one fabric may not hold subnets that overlap without being the same one (one /24, one /16).
    cidrs = sorted(nets)
    for i, first in enumerate(cidrs):
        for second in cidrs[i + 1:]:
            a, hosts_a = nets[first]
            b, hosts_b = nets[second]
            if a.first <= b.last and b.first <= a.last:
                findings.append(Finding(", ".join(sorted(hosts_a + hosts_b)), "sparkfleet_fabric_subnet", "%s / %s" % (
                    first, second), "overlapping fabric subnets: %s on %s, %s on %s" % (
                    first, ", ".join(hosts_a), second, ", ".join(hosts_b)),
                    "set one sparkfleet_fabric_subnet for the whole fabric, in group_vars"))
    return findings


# The subnets of the two halves of the cabled port, by the variable the inventory sets (the first that is set), with the
# network role's default; the first half's format is check_fabric's.
SUBNET_VARIABLES = (("first", ("qsfp_network_subnet", "sparkfleet_fabric_subnet"), "192.168.100.0/24"),
                    ("second", ("qsfp_network_second_half_subnet", "sparkfleet_fabric_subnet_second_half"),
                     "192.168.101.0/24"))


def check_fabric_subnets(fleet):
    """What the network role's fabric_address filter refuses of a half's subnet (``fabric_subnet.subnet_problem``:
    host bits set, not CIDR, not IPv4), and the two halves of the port in overlapping subnets: each half is its own
    route (rule qsfp_both_halves), and with one subnet the kernel sends both halves' traffic out of one of them."""
    findings = {}
    for host in sorted(fleet):
        host_vars = fleet[host]
        nets = {}
        for half, variables, default in SUBNET_VARIABLES:
            variable = next((v for v in variables if host_vars.get(v)), None)
            subnet = host_vars.get(variable) if variable else default
            if not isinstance(subnet, str) or not role_settings.known(subnet):
                continue  # a type is check_variable_types', a template the role's
            net, problem = fabric_subnet.subnet_problem(subnet)
            if problem and (half == "second" or "host bits" in problem[0]):
                findings.setdefault((variable, subnet, problem), []).append(host)
            nets[half] = (net, variable or "%s (default %s)" % (variables[-1], default), subnet)
        if len(nets) == 2 and None not in (nets["first"][0], nets["second"][0]) and \
                nets["first"][0].first <= nets["second"][0].last and nets["second"][0].first <= nets["first"][0].last:
            variable, subnet = nets["second"][1], nets["second"][2]
            findings.setdefault((variable, subnet, (
                "overlaps the first half's subnet %s (%s): each half of the port needs its own subnet, or the kernel "
                "routes both halves' traffic out of one (rule qsfp_both_halves)" % (nets["first"][2], nets["first"][1]),
                "give the second half a subnet apart from the first, e.g. 192.168.101.0/24")), []).append(host)
    return [Finding(", ".join(hosts), variable, subnet, problem, fix)
            for (variable, subnet, (problem, fix)), hosts in sorted(findings.items(), key=lambda item: item[1])]


# A problem of the cluster layout handed to the entry check, by the placement key that causes it.
_CLUSTER_KEY_TO_ENTRY = {"executor": "executor", "master_port": "master_port", "nnodes": "nodes", "node_rank": "nodes"}


def _check_nodes(fleet, host, index, model, nodes):
    """The ``nodes`` of an entry: a non-empty list of distinct inventory hosts that holds this host."""
    host_vars = fleet[host]
    variable = _var(host_vars, index, model, "nodes")
    if not isinstance(nodes, list) or not nodes or not all(isinstance(n, str) for n in nodes):
        return [Finding(host, variable, nodes, "must be a non-empty list of inventory hostnames",
                        "write nodes: [%s, ...] (the first node serves the API)" % host)]
    doubled = sorted(set(n for n in nodes if nodes.count(n) > 1))
    if doubled:
        return [Finding(host, variable, nodes, "names %s more than once" % ", ".join(doubled),
                        "list each host of the model once")]
    missing = [n for n in nodes if n not in fleet]
    if missing:
        hints = ["%s (did you mean %s?)" % (n, close[0]) if close else n for n, close in
                 ((n, difflib.get_close_matches(n, sorted(fleet), n=1)) for n in missing)]
        return [Finding(host, variable, nodes, "names host(s) not in this inventory: %s" % ", ".join(hints),
                        "list inventory hosts of group sparks")]
    if host not in nodes:
        return [Finding(host, variable, nodes, "this host is not one of the model's nodes",
                        "assign the entry only to its member hosts (put it in a group of exactly those hosts)")]
    return []


def _check_members(fleet, host, index, model, nodes, seen):
    """The other members of a multi-node model carry the same entry, on one fabric subnet and,
    with the ray executor, in one Ray cluster. Each problem is reported once, not by every member."""
    findings = []

    def report(key, finding):
        if key not in seen:
            seen.add(key)
            findings.append(finding)

    name = model.get("name")
    head_vars = fleet[nodes[0]]
    head_subnet = head_vars.get("sparkfleet_fabric_subnet")
    executor = fleet_plan.executor_of(model, fleet_plan.executor_var(head_vars))
    for member in nodes:
        member_vars = fleet[member]
        if member != host:
            entries = [m for m in _models(member_vars) if isinstance(m, dict) and m.get("name") == name]
            if not entries:
                report(("missing", member, name), Finding(
                    member, _models_var(member_vars), [m.get("name") for m in _models(member_vars) if isinstance(m, dict)],
                    "model %s spans %s but is missing from this member" % (name, ", ".join(nodes)),
                    "give every member the same entry (put it in the cluster's group_vars)"))
            elif entries[0] != model:
                differ = sorted(k for k in set(entries[0]) | set(model) if entries[0].get(k) != model.get(k))
                hide = is_secret(differ[0], MODEL_ENTRY_SPEC)  # an api_key put in one member's entry is not printed
                report(("differs", tuple(sorted((host, member))), name), Finding(
                    member, "%s (%s).%s" % (_models_var(member_vars), name, differ[0]),
                    SECRET_SHOWN if hide else entries[0].get(differ[0]),
                    "differs from the entry of the same model on %s (%s); keys that differ: %s" % (
                        host, SECRET_SHOWN if hide else repr(model.get(differ[0])), ", ".join(differ)),
                    "give every member the same entry (put it in the cluster's group_vars)"))
        subnet = member_vars.get("sparkfleet_fabric_subnet")
        if member != nodes[0] and subnet != head_subnet:
            report(("subnet", member, name), Finding(
                member, "sparkfleet_fabric_subnet", subnet,
                "model %s spans %s but this member is on fabric subnet %s and its first node %s on %s" % (
                    name, ", ".join(nodes), subnet, nodes[0], head_subnet),
                "put every member of a multi-node model on one fabric subnet"))
        if executor == "ray" and (_ray_role(member_vars) is None or _cluster_of(member_vars) != _cluster_of(head_vars)):
            report(("ray", member, name), Finding(
                member, "group ray_head / ray_workers", member_vars.get("group_names"),
                "model %s uses the ray executor on %s but this member is not in the Ray cluster '%s' of %s" % (
                    name, ", ".join(nodes), _cluster_of(head_vars), nodes[0]),
                "put every member in group ray_head or ray_workers with the same sparkfleet_cluster, or use executor: mp"))
    return findings


def check_models(fleet, entry_check, memory_split, utilization):
    """Each model entry against the schema, the rule book, its cluster layout, ports and the memory of its hosts.

    ``entry_check(entry, gb10, cluster)`` is the collection's one model-entry check (the vllm_args
    filter's ``check_entry``): it returns ``(argv, problems, cluster_problems)``, every problem with
    its key, value and fix. ``memory_split(gb10, services, host)`` is the gpu_memory_utilization
    filter; it raises with a message naming the host and the models.
    """
    findings = []
    seen = set()
    address_of = fleet_plan.fleet_address_of(fleet)
    for host in sorted(fleet):
        host_vars = fleet[host]
        gb10 = (host_vars.get("ansible_facts") or {}).get("gb10") or {}
        ports = {}
        names = {}
        local_services = []
        placed = []
        for index, model in enumerate(_models(host_vars)):
            if not isinstance(model, dict):
                findings.append(Finding(host, _var(host_vars, index, model), model, "a model entry must be a mapping",
                                        "see the model entry keys in roles/vllm_service/README.md"))
                continue
            name = model.get("name")
            if isinstance(name, str) and name in names:
                findings.append(Finding(host, _var(host_vars, index, model, "name"), name,
                                        "also the name of sparkfleet_models[%d] on this host" % names[name],
                                        "give each model of a host its own name (it names the unit)"))
            elif isinstance(name, str):
                names[name] = index
            nodes = model["nodes"] if "nodes" in model else [host]
            problems = _check_nodes(fleet, host, index, model, nodes)
            if problems:
                findings.extend(problems)
                continue
            if len(nodes) > 1:
                findings.extend(_check_members(fleet, host, index, model, nodes, seen))
            port = model.get("port", fleet_plan.DEFAULT_PORT)
            # Only the first node serves the API; followers run headless (mp) or only ray start (ray).
            if nodes[0] == host and not isinstance(port, (dict, list)) and port in ports:
                findings.append(Finding(host, _var(host_vars, index, model, "port"), port,
                                        "already used by %s on this host" % ports[port],
                                        "give each model on a host its own port"))
            if nodes[0] == host and not isinstance(port, (dict, list)):
                ports.setdefault(port, name)
            # The layout the roles will render (fleet_plan), checked as vllm_service's vllm_args checks it.
            lay = fleet_plan.layout(model, host, fleet_plan.executor_var(host_vars), address_of)
            cluster = fleet_plan.cluster_args(lay)
            if len(nodes) > 1:
                cluster["master_addr"] = lay["master_addr"] or "0.0.0.0"  # a missing one is check_fabric's
            if lay["executor"] == "ray" and lay["rank"] > 0:
                # Ray followers only run `ray start`; the head's vllm serve is checked on the head.
                cluster["node_rank"] = 0
            _argv, problems, cluster_problems = entry_check(_entry(model), gb10, cluster)
            # A problem of the host's facts (key None: the driver) is reported once per host by check_host_facts.
            problems = [p for p in problems if p.key is not None]
            for problem in problems:
                findings.append(Finding(host, _var(host_vars, index, model, problem.key), problem.value, problem.problem, problem.fix))
            for problem in cluster_problems:
                key = _CLUSTER_KEY_TO_ENTRY.get(problem.key, problem.key)
                if key == "executor" and "executor" not in model:
                    continue  # it came from sparkfleet_executor, whose own check names it
                findings.append(Finding(host, _var(host_vars, index, model, key), model.get(key, problem.value),
                                        problem.problem, problem.fix))
            if not problems:
                local_services.append(_entry(model))
                placed.append((index, model))
        declared = [(_var(host_vars, index, model, "weights_gib"), _entry(model)) for index, model in placed
                    if model.get("weights_gib") is not None]
        findings.extend(_check_memory(host, gb10, local_services, memory_split, utilization, _models_var(host_vars),
                                      declared))
        if not all(_sized(entry) for entry in local_services):
            # No arithmetic of the whole host: each entry's weights alone must still fit its share.
            for index, model in placed:
                entry = _entry(model)
                share = float(entry.get("gpu_memory_utilization") or utilization["default"])
                short = weights_shortfall(gb10, entry, share)
                if short and entry.get("weights_gib") is not None and weights_shortfall(gb10, entry, utilization["ceiling"]):
                    # The weights the user declared exceed even the ceiling: the size, not the share, is what to check.
                    findings.append(_weights_gib_finding(host, _var(host_vars, index, model, "weights_gib"), entry,
                                                         weights_shortfall(gb10, entry, utilization["ceiling"])))
                elif short:
                    findings.append(Finding(host, _var(host_vars, index, model, "gpu_memory_utilization"),
                                            entry.get("gpu_memory_utilization", share), short,
                                            "spread the model over more Sparks (nodes), serve a smaller or quantized "
                                            "checkpoint, or raise gpu_memory_utilization (at most %.2f for all the "
                                            "host's models together)" % utilization["ceiling"]))
    return findings


# What decides the code a host's virtualenv holds (roles/vllm_venv): the members of one model must agree on each,
# or vllm_venv's drift check stops the run at the virtualenv stage, after the driver, network and NCCL stages ran.
VENV_PINS = ("vllm_venv_vllm_version", "vllm_venv_torch_version", "vllm_venv_torch_backend", "vllm_venv_triton_version",
             "vllm_venv_transformers_version", "vllm_venv_ray_version", "vllm_venv_packages",
             "vllm_venv_nodeps_packages", "vllm_venv_requirements_files", "vllm_venv_constraints_file")
_UNSET = "(unset: the role's default)"


def check_member_versions(fleet):
    """The members of a multi-node model set the same version pins (``VENV_PINS``): each member that differs from
    the model's first node is named with the variable it sets, once per variable."""
    findings = []
    seen = set()
    for host in sorted(fleet):
        for model in _models(fleet[host]):
            nodes = model.get("nodes") if isinstance(model, dict) else None
            if not isinstance(nodes, list) or len(nodes) < 2 or nodes[0] != host or \
                    not all(isinstance(n, str) and n in fleet for n in nodes):
                continue  # one node, not the first, or nodes check_models names
            head = fleet[host]
            for member in nodes[1:]:
                for variable in VENV_PINS:
                    mine, theirs = fleet[member].get(variable, _UNSET), head.get(variable, _UNSET)
                    if mine == theirs or (member, variable) in seen:
                        continue
                    seen.add((member, variable))
                    findings.append(Finding(member, variable, mine, "differs from %r on %s, the first node of model %s "
                                            "(%s): its members would install different code, and the virtualenv "
                                            "stage stops the run when their freezes differ, after the driver, network "
                                            "and NCCL stages ran" % (theirs, host, model.get("name"), ", ".join(nodes)),
                                            "set %s once for every member (the cluster's group_vars), or on none"
                                            % variable))
    return findings


def check_model_sources(fleet):
    """What the model_store role refuses before it fetches: an hf source not pinned to a commit where
    model_store_require_pinned (default true) asks for it, a gated repository without model_store_hf_token.
    The shape of a source is the entry check's business (check_models)."""
    findings = []
    for host in sorted(fleet):
        host_vars = fleet[host]
        pinned = _flag(host_vars.get("model_store_require_pinned", True))
        have_token = bool(host_vars.get("model_store_hf_token"))
        for index, model in enumerate(_models(host_vars)):
            if not isinstance(model, dict) or not isinstance(model.get("source"), dict):
                continue
            shape = set(p.text("") for p in check_source(model["source"], require_pinned=False, have_token=True))
            for problem in check_source(model["source"], require_pinned=pinned, have_token=have_token):
                if problem.text("") in shape:
                    continue
                findings.append(Finding(host, _var(host_vars, index, model, problem.key), problem.value,
                                        problem.problem, problem.fix))
    return findings


# Where the example inventories hold a place for what each user must write, and which can only fail later: a
# documentation address (RFC 5737, RFC 3849) where a run connects to a host, and an hf revision of one hex digit forty
# times (it passes as a commit, and no repository has it; an empty one is the entry check's finding).
DOCUMENTATION_NETWORKS = tuple(ipaddress.ip_network(n)
                               for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"))


def check_placeholders(fleet):
    """Placeholders a run would take for real: an hf ``source.revision`` of one digit repeated (the models stage would
    fail on it after the driver, network, NCCL and virtualenv stages changed the hosts), and a
    documentation address as the address Ansible connects to (``ansible_host``, else the inventory name) unless the
    connection is local. In the play such a host is unreachable and the preflight play stops (any_errors_fatal); this
    finding is for a host outside ``--limit``, which the run plans but never contacts: the limited hosts would go
    through every stage up to a model or Ray cluster that waits for it."""
    findings = []
    for host in sorted(fleet):
        host_vars = fleet[host]
        for index, model in enumerate(_models(host_vars)):
            source = model.get("source") if isinstance(model, dict) else None
            if not isinstance(source, dict) or source.get("type") != "hf" or not isinstance(source.get("revision"), str):
                continue  # no revision or the wrong type: check_model_sources and the entry check name it
            revision = source["revision"].strip()
            if not (len(revision) == 40 and len(set(revision)) == 1 and revision[0] in "0123456789abcdef"):
                continue  # a commit, or not 40 hex digits (check_model_sources), or empty (the entry check)
            findings.append(Finding(
                host, _var(host_vars, index, model, "source.revision"), source["revision"],
                "one digit repeated, a placeholder and no commit of %s: the models stage would fail on it, after the "
                "driver, network, NCCL and virtualenv stages changed the hosts" % (source.get("repo") or "the repository"),
                "write the commit you reviewed: 40 hex digits from the repository's 'Files and versions' history on "
                "the hub (or huggingface_hub's HfApi().model_info(%r).sha)" % (source.get("repo") or "org/name")))
        connection = str(host_vars.get("ansible_connection") or "ssh")
        if connection.rsplit(".", maxsplit=1)[-1] == "local":
            continue
        address = host_vars.get("ansible_host", host)
        try:
            ip = ipaddress.ip_address(str(address).strip())
        except ValueError:
            continue  # a name: resolved when connecting
        if any(ip.version == net.version and ip in net for net in DOCUMENTATION_NETWORKS):
            findings.append(Finding(
                host, "ansible_host", address,
                "a documentation address (RFC 5737/3849, the example inventories' placeholder), which no Spark holds: "
                "no run reaches this host there (connection %s), and a run limited to the others would take them "
                "through every stage up to a model or Ray cluster that waits for it" % connection,
                "write the management address you reach this Spark at over SSH"))
    return findings


def _addresses_of(host_vars):
    """The IPv4 addresses preflight knows the host holds or will hold: its fabric address (qsfp_network puts it on
    the port) and, from its facts, every address of every interface. ``(addresses, from_facts)``: whether the facts
    were read (without them an address cannot be refused as foreign)."""
    gb10 = (host_vars.get("ansible_facts") or {}).get("gb10") or {}
    found = set()
    if isinstance(host_vars.get("sparkfleet_fabric_address"), str):
        found.add(host_vars["sparkfleet_fabric_address"].strip())
    every = gb10.get("ipv4_addresses")
    found.update(str(a) for a in every or [])
    return found, isinstance(every, list)


def _ipv4(text):
    try:
        return ipaddress.IPv4Address(str(text).strip())
    except ValueError:
        return None


def _fabric_only(host_vars, address):
    """What makes ``address`` (an IPv4Address) one only the fabric reaches, or '': the host's fabric address (or
    vllm_service_node_ip), an address of a half's fabric subnet, or an address its facts show on a QSFP netdev."""
    for variable in ("sparkfleet_fabric_address", "vllm_service_node_ip"):
        if str(host_vars.get(variable) or "").strip() == str(address):
            return "the fabric address (%s)" % variable
    for _half, variables, default in SUBNET_VARIABLES:
        variable = next((v for v in variables if host_vars.get(v)), None)
        subnet = host_vars.get(variable) if variable else default
        try:
            net = ipaddress.ip_network(str(subnet), strict=False)
        except ValueError:
            continue  # check_fabric_subnets names it
        if address in net:
            return "an address of the fabric subnet %s (%s)" % (subnet, variable or "%s, the default" % variables[-1])
    netdevs = ((host_vars.get("ansible_facts") or {}).get("gb10") or {}).get("netdevs") or {}
    for name, netdev in sorted(netdevs.items()):
        if str(address) in [str(a).split("/", maxsplit=1)[0] for a in (netdev or {}).get("ipv4") or []]:
            return "an address of the QSFP port %s" % name
    return ""


def check_api_addresses(fleet):
    """The address each API binds to (an entry's ``host``, vLLM's ``--host``) is one the host holds, and one its
    gates can call (``fleet_plan.call_address``: a wildcard on the loopback, else the address itself): an IPv4
    address of this host, the loopback, or 0.0.0.0 / :: for every address. A name or an address of another host
    would leave vLLM unable to bind, after every earlier stage ran. An address only the fabric reaches (the fabric
    address, one of a half's subnet or of a QSFP port) is refused too: the gates pass and no LAN client connects."""
    findings = []
    for host in sorted(fleet):
        host_vars = fleet[host]
        addresses, from_facts = _addresses_of(host_vars)
        for index, model in enumerate(_models(host_vars)):
            if not isinstance(model, dict) or not isinstance(model.get("host", fleet_plan.DEFAULT_HOST), str):
                continue  # a wrong type is the entry check's finding
            nodes = model.get("nodes") or [host]
            if not isinstance(nodes, list) or not nodes or nodes[0] != host:
                continue  # only the first node serves the API
            bind = model.get("host", fleet_plan.DEFAULT_HOST).strip()
            if not bind or bind in fleet_plan.WILDCARD_HOSTS:
                continue  # empty: the entry check's finding
            fix = ("leave host out (%s: every address; the gates call the loopback) or write one of this host's "
                   "IPv4 addresses%s" % (fleet_plan.DEFAULT_HOST, " (%s)" % ", ".join(sorted(addresses)) if addresses
                                         else ""))
            try:
                address = ipaddress.IPv4Address(bind)
            except ValueError:
                findings.append(Finding(host, _var(host_vars, index, model, "host"), bind,
                                        "is no IPv4 address: the API binds to it and the host's gates (verify, the "
                                        "health probe) call it there", fix))
                continue
            fabric = host_vars.get("sparkfleet_fabric_address")
            # (one it does not hold is the finding below: vLLM could not bind it at all)
            fabric_only = _fabric_only(host_vars, address) if bind in addresses or not from_facts else ""
            lan = sorted(a for a in addresses if _ipv4(a) and not _ipv4(a).is_loopback
                         and not _fabric_only(host_vars, _ipv4(a)))
            if fabric_only:
                # verify and the health probe call the API where it binds, from the host itself, so they pass; the
                # clients on the LAN never reach it (the fabric is the Sparks' QSFP link and nothing else).
                findings.append(Finding(host, _var(host_vars, index, model, "host"), bind,
                                        "is %s, which only the Sparks on the QSFP fabric reach: the gates pass (they "
                                        "call the API where it binds, from this host) but no client on the LAN can "
                                        "connect to the model" % fabric_only,
                                        "leave host out (%s: every address; fabric_firewall keeps the API to "
                                        "fabric_firewall_api_sources)%s" % (
                                            fleet_plan.DEFAULT_HOST, "" if len(nodes) > 1 else
                                            ", or write the LAN address clients use%s" % (
                                                " (%s)" % ", ".join(lan) if lan else ""))))
            elif len(nodes) > 1:
                # The followers' head watch asks the head's /health at its fabric address (the mp master_addr).
                findings.append(Finding(host, _var(host_vars, index, model, "host"), bind,
                                        "the model spans %d Sparks, whose followers call this API at the head's "
                                        "fabric address %s: bound to %s it would never answer them, and they would "
                                        "restart over and over" % (len(nodes), fabric, bind),
                                        "leave host out (%s: every address: the followers over the fabric, the "
                                        "clients over the LAN)" % fleet_plan.DEFAULT_HOST))
            elif not address.is_loopback and bind not in addresses and from_facts:
                findings.append(Finding(host, _var(host_vars, index, model, "host"), bind,
                                        "is no address of this host (it has %s): vLLM could not bind the API"
                                        % (", ".join(sorted(addresses)) or "none"), fix))
    return findings


# Every map through which the inventory sets a NCCL/Gloo/UCX variable of a service: the roles' NCCL overrides
# (fabric.overrides of the nccl_env filter) and the environment maps laid over them, and the NCCL environment file.
NCCL_OVERRIDE_MAPS = ("vllm_service_nccl_overrides", "ray_nccl_overrides", "vllm_service_environment",
                      "ray_environment", "nccl_env_extra")
# Read as NCCL reads them: a comma list of prefixes ('=' first: exact names; '^' first: names left out). Gloo takes one
# name, UCX device[:port] names.
_PREFIX_MATCHED = ("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA")


def _fabric_netdevs(host_vars):
    """The netdevs qsfp_network gives a fabric address: the cabled half and the other half of its port, and any
    QSFP netdev the facts show holding an address."""
    interface = fleet_value("fabric_ifname", host_vars)
    if not isinstance(interface, str):
        return set()  # check_variable_types names it
    found = {interface, nccl_env_util.second_half(interface)}
    netdevs = ((host_vars.get("ansible_facts") or {}).get("gb10") or {}).get("netdevs") or {}
    found.update(name for name, nd in netdevs.items() if (nd or {}).get("ipv4"))
    return found


def _roce_of(host_vars, netdevs):
    """``{roce device: netdev}`` of the host: from its facts (gb10.roce), else by the GB10 naming (rocep1s0f1 is
    enp1s0f1np1's); ``(map, from_facts)``."""
    roce = ((host_vars.get("ansible_facts") or {}).get("gb10") or {}).get("roce")
    if isinstance(roce, dict):
        return dict((dev, (v or {}).get("netdev")) for dev, v in roce.items()), True
    return dict((re.sub(r"np\d+$", "", "roce" + n[2:]), n) for n in netdevs if n.startswith("en")), False


def _named_items(value):
    """The names a NCCL/Gloo/UCX list names (its '=' and ':port' parts off), and whether they are left out ('^')."""
    text = str(value).strip()
    excluded = text.startswith("^")
    items = [i.strip().lstrip("=").split(":", 1)[0] for i in text.lstrip("^").split(",") if i.strip()]
    return items, excluded


def check_nccl_overrides(fleet):
    """What the inventory tells NCCL, Gloo and UCX that its reader takes otherwise than meant:

    - an interface variable (``fabric_ifname_env_vars``: NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, UCX_NET_DEVICES) or
      NCCL_IB_HCA naming a port with no fabric address (or leaving out every one that has it): NCCL's bootstrap
      and Gloo's rendezvous then pick no interface, or the LAN, and a multi-node model hangs at its first collective;
    - NCCL_IB_DISABLE=1 on a host whose facts show an ACTIVE RoCE device on the fabric port: NCCL runs over TCP at a
      tenth of RoCE's bandwidth, and the nccl_env filter only warns (rule nccl_ib_transport). A host without facts
      (outside --limit) is not judged on this: this run does not change it, and the run that reaches it does.
    """
    findings = []
    interface_vars = tuple(rulebook.setting("fabric_ifname_env_vars"))
    for host in sorted(fleet):
        host_vars = fleet[host]
        fabric = _fabric_netdevs(host_vars)
        if not fabric:
            continue
        roce, from_facts = _roce_of(host_vars, fabric)
        fabric_roce = dict((dev, nd) for dev, nd in roce.items() if nd in fabric)
        gb10_roce = ((host_vars.get("ansible_facts") or {}).get("gb10") or {}).get("roce") or {}
        active = sorted(dev for dev in fabric_roce if any((p or {}).get("active") for p in
                                                          ((gb10_roce.get(dev) or {}).get("ports") or {}).values()))
        for variable in NCCL_OVERRIDE_MAPS:
            overrides = host_vars.get(variable)
            if not isinstance(overrides, dict):
                continue  # a type is check_variable_types' (or role_settings') finding
            for name in sorted(overrides, key=str):
                value = overrides[name]
                if value is None or not role_settings.known(value):
                    continue  # unset, or a template only the host can render
                where = "%s.%s" % (variable, name)
                if name in interface_vars or name == "NCCL_IB_HCA":
                    choices = sorted(fabric_roce) if name == "NCCL_IB_HCA" else sorted(fabric)
                    items, excluded = _named_items(value)
                    exact = str(value).strip().lstrip("^").startswith("=") or name not in _PREFIX_MATCHED

                    def matches(item, exact=exact):
                        return [c for c in choices if (c == item if exact else c.startswith(item))]
                    if excluded:
                        left_out = [c for c in choices if any(c in matches(i) for i in items)]
                        bad = left_out if choices and left_out == choices else []
                        said = "leaves out %s, every %s with a fabric address" % (
                            ", ".join(bad), "RoCE device of the port" if name == "NCCL_IB_HCA" else "netdev")
                    else:
                        bad = [i for i in items if not matches(i)]
                        said = "names %s, which %s no fabric address (%s)" % (
                            ", ".join(bad), "has" if len(bad) == 1 else "have", "the port's RoCE devices: %s%s" % (
                                ", ".join(choices) or "none", "" if from_facts else ", by their GB10 names")
                            if name == "NCCL_IB_HCA" else "the fabric netdevs: %s" % ", ".join(choices))
                    if bad or not items:
                        findings.append(Finding(host, where, value, "%s: %s would %s, and a multi-node model "
                                                "hangs at its first collective or crawls over the LAN" % (
                                                    said if items else "names nothing", name,
                                                    "find no RoCE device to use" if name == "NCCL_IB_HCA"
                                                    else "bind no fabric interface"),
                                                "remove %s from %s: the nccl_env filter sets it from the facts to "
                                                "the cabled port (%s, rule %s)%s" % (
                                                    name, variable, ", ".join(choices) or "its halves",
                                                    "nccl_ib_hca" if name == "NCCL_IB_HCA" else "fabric_interface_env",
                                                    "; a different port is %s" % inventory_variable("fabric_ifname")
                                                    if name != "NCCL_IB_HCA" else "")))
                elif name == "NCCL_IB_DISABLE" and str(value).strip() and not re.match(r"\s*[+-]?\d", str(value)):
                    # NCCL reads it with strtoll: 'true' or 'yes' read 0, so IB stays on, whatever was meant.
                    findings.append(Finding(host, where, value, "is read by NCCL as a number (strtoll): %r reads %d, "
                                            "so it does not do what the word says"
                                            % (value, nccl_env_util.nccl_int(value)),
                                            "write 0 (RoCE, what the rule book sets) or remove it from %s" % variable))
                elif name == "NCCL_IB_DISABLE" and nccl_env_util.nccl_int(value) != 0 and active:
                    findings.append(Finding(host, where, value, "forces NCCL onto TCP sockets (~%s GB/s) although the "
                                            "facts show ACTIVE RoCE on the fabric port (%s, ~%s GB/s; rule "
                                            "nccl_ib_transport): the nccl_env filter only warns, and the bandwidth "
                                            "gate (floor %s GB/s) fails after every stage ran" % (
                                                rulebook.setting("nccl_bus_bandwidth_socket_gbps"), ", ".join(active),
                                                rulebook.setting("nccl_bus_bandwidth_roce_gbps"),
                                                rulebook.setting("nccl_bus_bandwidth_floor_gbps")),
                                            "remove NCCL_IB_DISABLE from %s (the rule book sets it to %s); "
                                            "sparkfleet_allow_socket_fallback only accepts TCP where RoCE is missing"
                                            % (variable, rulebook.setting("nccl_ib_disable"))))
    return findings


def check_serving_driver(fleet):
    """A host that serves a model, moved by the inventory to a forbidden driver branch (rule driver_branch: 590
    deadlocks CUDA graphs on GB10) with ``nvidia_driver_accept_forbidden_branch_reason``: the reason lets the driver
    role install it, and vllm_service then refuses to serve on it, after the driver stage moved the host. The reason
    is for a host that serves nothing (role_settings accepts it there)."""
    findings = []
    for host in sorted(fleet):
        host_vars = fleet[host]
        branch, reason = host_vars.get("nvidia_driver_branch"), host_vars.get("nvidia_driver_accept_forbidden_branch_reason")
        forbidden = host_vars.get("nvidia_driver_forbidden_branches")
        forbidden = [str(b) for b in (forbidden if isinstance(forbidden, list) else rulebook.setting("driver_forbidden_branches"))]
        if branch is None or str(branch) not in forbidden or not (isinstance(reason, str) and reason.strip()):
            continue  # unset, allowed, or without a reason (role_settings refuses that)
        served = [m.get("name") for m in _models(host_vars) if isinstance(m, dict) and host in (m.get("nodes") or [host])]
        if served:
            findings.append(Finding(host, "nvidia_driver_branch", branch,
                                    "this host serves %s; branch %s deadlocks CUDA graphs on GB10 (rule driver_branch), "
                                    "which vLLM keeps on: nvidia_driver_accept_forbidden_branch_reason (%r) lets the "
                                    "driver role install it, then vllm_service refuses to serve on it, after the driver "
                                    "stage moved the host" % (", ".join(str(n) for n in served), branch, reason),
                                    "remove nvidia_driver_branch and nvidia_driver_accept_forbidden_branch_reason from "
                                    "%s (the branch is %s), or move its models to a Spark on %s" % (
                                        host, rulebook.setting("driver_branch"), rulebook.setting("driver_branch"))))
    return findings


# The roles' own names for the services' account (each defaults to the fleet's service_user).
SERVICE_USER_VARIABLES = ("ray_user", "vllm_service_user")


def check_fleet_variables(fleet):
    """The fleet-wide inventory variables (plugins/module_utils/fleet_defaults.py) whose default is an absolute
    path must stay one: what the roles refuse only when they run, after earlier stages changed hosts."""
    findings = []
    for host in sorted(fleet):
        host_vars = fleet[host]
        for name, (default, variable) in sorted((n, v[:2]) for n, v in FLEET_DEFAULTS.items()):
            value = host_vars.get(variable) if variable else None
            # ('~' at the start is check_variable_types' finding already)
            if isinstance(default, str) and default.startswith("/") and isinstance(value, str) and value \
                    and not value.startswith(("/", "~")):
                findings.append(Finding(host, variable, value, "not an absolute path (the roles and systemd read it "
                                        "from /)", "write the absolute path on the host, e.g. %s" % default))
        # The service account is made a system account with no login shell (service_account changes an existing
        # account's shell and group): the admin's own login account, or root, would be locked out or exposed.
        login = host_vars.get("ansible_user") or host_vars.get("ansible_ssh_user")
        for variable in (inventory_variable("service_user"),) + SERVICE_USER_VARIABLES:
            account = host_vars.get(variable)
            if isinstance(account, str) and account and (account == "root" or account == login):
                findings.append(Finding(host, variable, account, "the services' account would be %s; "
                                        "the roles make it a system account without a login shell" % (
                                            "root, so the sandboxed units would run with every privilege"
                                            if account == "root" else "the account Ansible logs in as (ansible_user)"),
                                        "leave %s out (default %s), or name an account used by nothing else"
                                        % (variable, fleet_default("service_user"))))
    return findings


def check_role_settings(fleet, roles_dir=None, named=()):
    """Each role's own settings (plugins/module_utils/role_settings.py, the checks the roles make of them when
    they start), judged on every host with the inventory's value of each variable, else the role's default. A
    variable in ``named`` (``(host, variable)`` another check already refused, its type say) is not judged again."""
    roles_dir = roles_dir or fleet_plan.ROLES_DIR
    defaults = dict((role, load_role_defaults(roles_dir, role)) for role in role_settings.roles())
    named = set(named)
    findings = []
    for host in sorted(fleet):
        host_vars = fleet[host]
        for role in role_settings.roles():
            settings = dict((name, host_vars[name] if name in host_vars else defaults[role].get(name, role_settings.UNKNOWN))
                            for name in role_settings.variables(role) if (host, name) not in named)
            findings.extend(Finding(host, problem.variable, problem.value, problem.problem, problem.fix)
                            for problem in role_settings.problems(role, settings))
    return findings


def check_torch(fleet):
    """A GPU host's virtualenv takes torch from PyPI at the rule book's version, the CUDA 13 build on aarch64
    (rule torch_cuda_build): a local version needs another index and is a CPU build or another CUDA major."""
    findings = []
    for host in sorted(fleet):
        host_vars = fleet[host]
        form = host_vars.get("vllm_venv_torch_backend", "cuda")
        if form not in gpu_gate.FORMS:
            continue  # check_variable_types names the choices
        if "vllm_venv_packages" in host_vars:
            packages, nodeps = host_vars.get("vllm_venv_packages"), host_vars.get("vllm_venv_nodeps_packages") or []
            if not isinstance(packages, list) or not isinstance(nodeps, list):
                continue  # its type is check_variable_types' business
            specs = [str(spec) for spec in packages + nodeps]
            if gpu_gate.torch_requirement(specs) is None and host_vars.get("vllm_venv_requirements_files"):
                continue  # torch comes from requirement files preflight cannot read; the GPU gate judges it
            variable, value = "vllm_venv_packages", [s for s in specs if gpu_gate.torch_requirement([s]) is not None]
        elif isinstance(host_vars.get("vllm_venv_torch_version"), str):
            variable, value = "vllm_venv_torch_version", host_vars["vllm_venv_torch_version"]
            specs = ["torch==%s" % value]
        else:
            continue  # the role's default: the rule book's CUDA pin
        problem = gpu_gate.torch_pin_problem(specs, form)
        if problem:
            findings.append(Finding(host, variable, value, problem,
                                    "pin torch==%s (vllm_venv_torch_version) with vllm_venv_torch_backend: cuda, "
                                    "or set vllm_venv_torch_backend: cpu only for a host without a GPU"
                                    % rulebook.setting("torch_version")))
    return findings


_sized = fleet_plan.sized


WEIGHTS_GIB_FIX = ("check weights_gib: the size of the checkpoint's weight files for the whole model in GiB (2^30 "
                   "bytes; `du -s --block-size=1G` of its directory, or the sum of its *.safetensors on the hub), or "
                   "leave it out to size the weights from params_b; if it is right, spread the model over more Sparks "
                   "(nodes) or serve a quantized checkpoint")


def _weights_gib_finding(host, variable, entry, shortfall, arithmetic=None):
    """The finding that names the entry's ``weights_gib`` (the user's value) rather than the utilization computed
    from it."""
    return Finding(host, variable, entry["weights_gib"],
                   "the gpu-memory-utilization computed from it is out of range: %s, even at the ceiling%s" % (
                       shortfall, ". %s" % arithmetic if arithmetic else ""), WEIGHTS_GIB_FIX)


def _check_memory(host, gb10, services, memory_split, utilization, variable="sparkfleet_models", declared=()):
    """The models of one host fit its unified memory.

    With sizing keys on every entry the gpu_memory_utilization filter does the arithmetic;
    otherwise only the utilizations (explicit, or the rule book default) are summed against
    the ceiling, since the model size is unknown. ``declared``: ``(variable, entry)`` of the entries whose weights
    the user sized with ``weights_gib``; where the arithmetic fails, an entry whose declared weights alone exceed
    the ceiling's share is named by its ``weights_gib`` and value, and the others' values are quoted.
    """
    if not services:
        return []
    names = [m.get("name") for m in services]
    if gb10.get("memory") and all(_sized(m) for m in services):
        try:
            memory_split(gb10, services, host)
        except Exception as exc:
            culprits = [(name, entry, weights_shortfall(gb10, entry, utilization["ceiling"])) for name, entry in declared]
            culprits = [c for c in culprits if c[2]]
            if culprits:
                return [_weights_gib_finding(host, name, entry, short, str(exc)) for name, entry, short in culprits]
            quoted = "; the weights of %s are sized from weights_gib (%s)" % (
                ", ".join(str(entry.get("name")) for _name, entry in declared),
                ", ".join("%s=%r" % (name, entry["weights_gib"]) for name, entry in declared)) if declared else ""
            return [Finding(host, variable, names, str(exc) + quoted,
                            "serve fewer or smaller models on this host, shorten max_model_len, or quantize")]
        return []
    total = sum(float(m.get("gpu_memory_utilization") or utilization["default"]) for m in services)
    if round(total, 4) > utilization["ceiling"]:
        return [Finding(host, variable + "[*].gpu_memory_utilization", names,
                        "the services of this host add up to %.2f of unified memory, above the ceiling %.2f (the page "
                        "cache and the OS compete with CUDA for the same memory)" % (total, utilization["ceiling"]),
                        "lower gpu_memory_utilization so the sum stays at or below %.2f, or move a model "
                        "to another Spark" % utilization["ceiling"])]
    return []


def _flag(value):
    """An inventory boolean as Ansible reads it: the string "false" of an INI inventory is false."""
    try:
        return boolean(value, strict=False)
    except TypeError:
        return False


DRIVER_VARIABLE = "driver version (nvidia-smi / /proc/driver/nvidia/version)"


def check_host_facts(fleet, forbidden_branches, nccl_env):
    """Rule-book checks of each host's gathered facts: driver branch, usable RoCE transport."""
    findings = []
    for host in sorted(fleet):
        host_vars = fleet[host]
        gb10 = (host_vars.get("ansible_facts") or {}).get("gb10")
        if not gb10:
            continue
        driver = gb10.get("driver") or {}
        serves = any(isinstance(m, dict) for m in _models(host_vars))
        for version in (driver.get("nvidia_smi_version"), driver.get("kernel_module_version")):
            if not version or str(version).split(".", 1)[0] not in forbidden_branches:
                continue
            if not host_vars.get("nvidia_driver_accept_forbidden_branch_reason"):
                findings.append(Finding(host, DRIVER_VARIABLE, version,
                                        "driver branch %s deadlocks CUDA graphs on GB10 (rule driver_branch)"
                                        % str(version).split(".", 1)[0],
                                        "downgrade to the 580 branch, or accept it with "
                                        "nvidia_driver_accept_forbidden_branch_reason: '<why>'"))
            elif serves:
                findings.append(Finding(host, DRIVER_VARIABLE, version,
                                        "driver branch %s is accepted for the driver role, but vLLM keeps CUDA graphs "
                                        "on and refuses to serve on it (rule driver_branch)" % str(version).split(".", 1)[0],
                                        "downgrade to the 580 branch, or serve no model on this host"))
            break
        if driver.get("reboot_pending") and serves:
            findings.append(Finding(host, DRIVER_VARIABLE, "%s / %s" % (
                driver.get("nvidia_smi_version"), driver.get("kernel_module_version")),
                "the installed driver and the loaded kernel module differ (rule driver_reboot_pending); CUDA "
                "cannot initialise", "reboot the host (nvidia_driver_reboot: true lets the driver role do it)"))
        # The fabric interface must be one of the host's QSFP netdevs (qsfp_network configures it, NCCL,
        # Gloo and UCX are pinned to it): a misspelt name, or the management port, is the interface
        # variable's fault, whatever the host serves.
        interface = fleet_value("fabric_ifname", host_vars)
        netdevs = gb10.get("netdevs") or {}
        if netdevs and isinstance(interface, str) and interface not in netdevs:  # a wrong type: check_variable_types
            close = difflib.get_close_matches(str(interface), list(netdevs), n=1)
            management = (gb10.get("management") or {}).get("devs") or []
            findings.append(Finding(
                host, inventory_variable("fabric_ifname"), interface,
                "not a QSFP netdev of this host (%s: %s)%s" % (
                    "it has", ", ".join(sorted(netdevs)),
                    "; it is the management port" if interface and interface in management else ""),
                "set %s to the cabled QSFP netdev%s" % (inventory_variable("fabric_ifname"),
                                                        " ('%s'?)" % close[0] if close else "")))
            continue
        multi_node = any(isinstance(m.get("nodes"), list) and len(m["nodes"]) > 1
                         for m in _models(host_vars) if isinstance(m, dict))
        if multi_node and host_vars.get("sparkfleet_fabric_address"):
            fabric = {
                "interface": fleet_value("fabric_ifname", host_vars),
                "address": host_vars.get("sparkfleet_fabric_address"),
                "allow_socket_fallback": _flag(host_vars.get("sparkfleet_allow_socket_fallback", False)),
            }
            try:
                nccl_env(gb10, fabric, host)
            except Exception as exc:
                findings.append(Finding(host, "sparkfleet_allow_socket_fallback",
                                        host_vars.get("sparkfleet_allow_socket_fallback", False), str(exc),
                                        "cable and bring up the RoCE port, or set sparkfleet_allow_socket_fallback: true "
                                        "knowing NCCL then runs at ~2 GB/s instead of ~24 GB/s"))
    return findings


def load_role_defaults(roles_dir, role):
    """A role's defaults/main.yml as plain data (values that are templates stay strings)."""
    path = os.path.join(roles_dir, role, "defaults", "main.yml")
    if not os.path.isfile(path):
        return {}
    with open(path) as handle:
        return yaml.safe_load(handle) or {}


def _ray_role(host_vars):
    return fleet_plan.ray_role(host_vars.get("group_names"))


def _port_number(value):
    """An integer port, or its digits as text (the roles render it either way)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return isinstance(value, int) and not isinstance(value, bool) and MINIMUM["port"] <= value <= MAXIMUM["port"]


def _outside_sparks(groups, fleet, group="ray_head"):
    """The hosts of ``group`` in the inventory's ``groups`` (the play's ``groups``) that are not in group sparks:
    preflight and the roles plan group sparks only, so such a host heads no cluster."""
    return sorted(h for h in (groups or {}).get(group) or [] if h not in fleet and h not in (groups or {}).get("sparks", []))


def check_cluster_layout(fleet, ray_defaults=None, node_exporter_port=None, groups=None):
    """One Ray head per cluster, heads that exist, and no port used twice on a host
    (model APIs, the mp rendezvous port of the node serving a multi-node model, Ray's ports). ``groups``: the
    inventory's groups, where known, to name a head put in group ray_head but outside group sparks."""
    ray_defaults = ray_defaults or {}
    outside_heads = _outside_sparks(groups, fleet)
    inventory_groups = groups or {}
    findings = []
    clusters = {}
    for host in sorted(fleet):
        host_vars = fleet[host]
        role = _ray_role(host_vars)
        groups = host_vars.get("group_names") or []
        if "ray_head" in groups and "ray_workers" in groups:
            findings.append(Finding(host, "group ray_head / ray_workers", groups,
                                    "is in both ray_head and ray_workers: a Spark runs one Ray node, head or worker",
                                    "keep the host in one of the two groups"))
        if not isinstance(host_vars.get("sparkfleet_ray_head_host"), (str, type(None))):
            continue  # check_variable_types names it
        if role is None and not host_vars.get("sparkfleet_ray_head_host"):
            continue
        clusters.setdefault(_cluster_of(host_vars), []).append(host)
        head = host_vars.get("sparkfleet_ray_head_host")
        if role and head is not None and head not in fleet and any(
                head in hosts for name, hosts in inventory_groups.items() if name not in ("all", "ungrouped", "sparks")):
            findings.append(Finding(host, "sparkfleet_ray_head_host", head, "names %s, which is in the inventory but "
                                    "not in group sparks: preflight and the roles plan group sparks only, so the "
                                    "cluster would have no head" % head,
                                    "put %s in group sparks too (all: children: sparks: hosts:), or name a Spark of "
                                    "group ray_head" % head))
        elif role and head is not None and head not in fleet:
            findings.append(Finding(host, "sparkfleet_ray_head_host", head, "names a host that is not in this inventory",
                                    "set it to the inventory host of group ray_head"))
        elif role and head is not None and _ray_role(fleet[head]) != "ray_head":
            findings.append(Finding(host, "sparkfleet_ray_head_host", head, "%s is not in group ray_head" % head,
                                    "put %s in group ray_head or name the host that is" % head))
        elif role and head is not None and _cluster_of(fleet[head]) != _cluster_of(host_vars):
            findings.append(Finding(host, "sparkfleet_ray_head_host", head,
                                    "%s heads Ray cluster '%s', not this host's '%s'" % (
                                        head, _cluster_of(fleet[head]), _cluster_of(host_vars)),
                                    "leave sparkfleet_ray_head_host unset (the fleet plan finds each cluster's "
                                    "head) or name the head of the host's own sparkfleet_cluster"))
    for name, members in sorted(clusters.items()):
        heads = [h for h in members if _ray_role(fleet[h]) == "ray_head"]
        named = sorted(set(str(fleet[h].get("sparkfleet_ray_head_host")) for h in members
                           if fleet[h].get("sparkfleet_ray_head_host") is not None))
        if not heads and outside_heads:
            findings.append(Finding(", ".join(members), "group ray_head", outside_heads,
                                    "cluster '%s' has no Ray head: group ray_head holds %s, which %s not in group "
                                    "sparks, and preflight and the roles plan group sparks only" % (
                                        name, ", ".join(outside_heads), "is" if len(outside_heads) == 1 else "are"),
                                    "put %s in group sparks too (all: children: sparks: hosts:), beside ray_head"
                                    % ", ".join(outside_heads)))
        elif len(heads) != 1:
            findings.append(Finding(", ".join(members), "group ray_head", heads,
                                    "cluster '%s' has %d Ray heads; it needs exactly one" % (name, len(heads)),
                                    "put one host of the cluster in group ray_head and the others in ray_workers, "
                                    "or give separate clusters their own sparkfleet_cluster"))
        if len(named) > 1:
            findings.append(Finding(", ".join(members), "sparkfleet_ray_head_host", named,
                                    "the members of cluster '%s' name different heads" % name,
                                    "set sparkfleet_ray_head_host once, in the cluster's group_vars"))

    for host in sorted(fleet):
        host_vars = fleet[host]
        used = {}

        def take(port, owner, variable):
            if isinstance(port, bool):
                return
            try:
                port = int(port)
            except (TypeError, ValueError):
                return  # the type is the entry check's (or role_settings') finding
            if port in used:
                findings.append(Finding(host, variable, port, "already used by %s on this host" % used[port],
                                        "give each service on a host its own port"))
            else:
                used[port] = owner

        role = _ray_role(host_vars)
        worker_range = None
        if role:
            ports = dict(ray_defaults.get(role, {}))
            own = host_vars.get(role + "_ports")
            if isinstance(own, dict):
                # merged over the role's default key by key (fleet_plan.ray_ports); the map itself (its keys, types,
                # the ports it gives twice, the worker range) is role_settings' check of <role>_ports
                ports.update((key, value) for key, value in own.items() if key in ports)
            for key, port in sorted(ports.items()):
                if key in ("min_worker", "max_worker") or (_port_number(port) and int(port) in used):
                    continue
                take(port, "Ray (%s_ports.%s)" % (role, key), "%s_ports.%s" % (role, key))
            try:
                worker_range = (int(ports["min_worker"]), int(ports["max_worker"]))
            except (KeyError, TypeError, ValueError):
                worker_range = None
        # node_exporter (fleet_health, installed unless fleet_health_node_exporter is false) holds its port
        # (``node_exporter_port``: the role's default, read from its defaults by the caller).
        if _flag(host_vars.get("fleet_health_node_exporter", True)) and \
                host_vars.get("fleet_health_node_exporter_port", node_exporter_port) is not None:
            take(host_vars.get("fleet_health_node_exporter_port", node_exporter_port),
                 "node_exporter (fleet_health_node_exporter_port)", "fleet_health_node_exporter_port")
        for index, model in enumerate(_models(host_vars)):
            if not isinstance(model, dict):
                continue
            nodes = model.get("nodes") or [host]
            if not isinstance(nodes, list) or not nodes or nodes[0] != host:
                continue
            port = model.get("port", fleet_plan.DEFAULT_PORT)
            if isinstance(port, (dict, list)):
                continue  # its type is the entry check's finding
            # Two API ports alike are reported by check_models; here an API port against Ray and rendezvous ports.
            if not str(used.get(port, "")).endswith("(port)"):
                take(port, "model %s (port)" % model.get("name"), _var(host_vars, index, model, "port"))
            executor = fleet_plan.executor_of(model, fleet_plan.executor_var(host_vars))
            if len(nodes) > 1 and executor == "mp":
                take(model.get("master_port", fleet_plan.DEFAULT_MASTER_PORT), "model %s (master_port)" % model.get("name"),
                     _var(host_vars, index, model, "master_port"))
            if worker_range:
                for key in ("port", "master_port"):
                    value = model.get(key)
                    if isinstance(value, int) and worker_range[0] <= value <= worker_range[1]:
                        findings.append(Finding(host, _var(host_vars, index, model, key), value,
                                                "inside Ray's worker port range %d-%d" % worker_range,
                                                "choose a port outside %d-%d" % worker_range))
    return findings


def check_firewall(fleet, roles_dir=None):
    """What the fabric_firewall role would refuse, before anything changes: API sources that are not CIDR
    networks, extra internal ports that are not ports, an API port that is also an internal port of the host
    (extra_internal_ports, model_store's or the NCCL builder's rsync port; it would be dropped). Its timeouts and
    files are check_role_settings'."""
    findings = []
    for host in sorted(fleet):
        host_vars = fleet[host]
        sources = host_vars.get("fabric_firewall_api_sources")
        if isinstance(sources, list):
            for index, source in enumerate(sources):
                try:
                    fabric_firewall.parse_network(source, "fabric_firewall_api_sources[%d]" % index)
                except fabric_firewall.FirewallError:
                    findings.append(Finding(host, "fabric_firewall_api_sources[%d]" % index, source,
                                            "not a network in CIDR form",
                                            "write it as network/prefix, e.g. 10.0.0.0/24 or 2001:db8::/48 "
                                            "(a single client: 10.0.0.5/32)"))
        extra = host_vars.get("fabric_firewall_extra_internal_ports")
        good_extra = []
        if isinstance(extra, list):
            for index, value in enumerate(extra):
                try:
                    fabric_firewall.parse_ports(value, "fabric_firewall_extra_internal_ports[%d]" % index)
                    good_extra.append(value)
                except fabric_firewall.FirewallError as exc:
                    findings.append(Finding(host, "fabric_firewall_extra_internal_ports[%d]" % index, value,
                                            str(exc).split(": ", 1)[-1],
                                            "write a port (8080) or a range (\"9000-9010\") within 1-65535"))
        models = host_vars.get("fabric_firewall_models")
        models = models if isinstance(models, list) else _models(host_vars)
        try:
            internal = fabric_firewall.internal_ports(
                host, groups=host_vars.get("group_names"),
                ray_ports={"ray_head": host_vars.get("ray_head_ports"), "ray_worker": host_vars.get("ray_worker_ports")},
                models=models, executor=fleet_plan.executor_var(host_vars),
                rsync_port=host_vars.get("model_store_rsync_port"),
                extra=good_extra, roles_dir=roles_dir or fabric_firewall.ROLES_DIR,
                nccl_rsync_port=host_vars.get("nccl_rsync_port"), nccl_build_once=host_vars.get("nccl_build_once"))
        except fabric_firewall.FirewallError:
            continue  # a port that is not a port: check_models, check_cluster_layout or the types name it
        for index, model in enumerate(models):
            if not isinstance(model, dict):
                continue
            try:
                if fabric_firewall.model_nodes(model, host)[0] != host:
                    continue
            except fabric_firewall.FirewallError:
                continue  # nodes of the wrong type: check_models names it
            port = model.get("port", fleet_plan.DEFAULT_PORT)
            for low, high, why in internal:
                # Ray's ports and the rendezvous against the API: check_cluster_layout names those.
                if isinstance(port, int) and low <= port <= high and not why.startswith(("model ", "ray_")):
                    findings.append(Finding(host, _var(host_vars, index, model, "port"), port,
                                            "is also internal (%s, %s) on this host: the fabric firewall would drop "
                                            "the API from outside the fabric" % (why, low if low == high else
                                                                                 "%d-%d" % (low, high)),
                                            "give the API a port outside the host's internal ports"))
    return findings


def optout_warnings(fleet):
    """One loud line per endpoint that answers without an API key (api_key: none with a reason;
    without a reason check_entry refuses it). Only the host serving the API (the first node) counts."""
    lines = []
    for host in sorted(fleet):
        host_vars = fleet[host]
        for index, model in enumerate(_models(host_vars)):
            if not isinstance(model, dict):
                continue
            nodes = model.get("nodes") if isinstance(model.get("nodes"), list) and model.get("nodes") else [host]
            reason = api_key_optout(model)
            if reason and nodes[0] == host:
                lines.append("%s: %s: api_key: none, the OpenAI API on port %s answers ANYONE who reaches it, "
                             "without a key (reason given: %s)" % (host, _var(host_vars, index, model),
                                                                   model.get("port", fleet_plan.DEFAULT_PORT), reason))
    return lines


def check_fleet(fleet, role_specs, checks=None):
    """Every check over ``{host: hostvars}``; returns all findings (``judge_fleet`` without its plan)."""
    return judge_fleet(fleet, role_specs, checks)[1]


def fleet_secrets(fleet, role_specs):
    """Every secret value of the inventory (``redaction.secret_values``): the roles' ``no_log`` variables, the model
    entries' secret keys, and whatever the names and shapes of secrets show, on every host."""
    names = set(name for options in role_specs.values() for name, spec in options.items() if (spec or {}).get("no_log"))
    names.update(key for key, rule in MODEL_ENTRY_SPEC.items() if rule.get("secret"))
    known = set(name for options in role_specs.values() for name in options) | set(MODEL_ENTRY_SPEC)
    return redaction.secret_values(fleet, names, known)


def redact_findings(findings, secrets):
    """``findings`` with every secret of the run hidden in their values, problems and fixes (a secret inside a list
    or a mapping a finding quotes, or inside the text of another value, included)."""
    return [Finding(f.host, f.variable, redaction.redact(f.value, secrets), redaction.redact_text(f.problem, secrets),
                    redaction.redact_text(f.fix, secrets)) for f in findings]


def judge_fleet(fleet, role_specs, checks=None):
    """``(plan, findings)``: every check over ``{host: hostvars}``, and the fleet plan of an inventory the checks
    accept, built once, with each host's memory arithmetic (None, with the findings, otherwise).

    ``checks`` carries the collection's filters and rule book values the deeper
    checks use: entry_check, gpu_memory_utilization, nccl_env, forbidden_branches.
    Without ``checks`` only the variables' types and names are checked, and no plan is built.
    Every finding returned has the inventory's secrets hidden (``redact_findings``), whichever check wrote it.
    """
    findings = []
    secrets = fleet_secrets(fleet, role_specs)
    for host in sorted(fleet):
        host_vars = fleet[host]
        findings.extend(check_variable_types(host, host_vars, role_specs))
        findings.extend(check_unknown_variables(host, host_vars, role_specs))
    if not checks:
        return None, redact_findings(findings, secrets)
    # One memory arithmetic per host: check_models judges it and the plan carries the same result.
    checks = dict(checks, gpu_memory_utilization=fleet_plan.split_once(checks["gpu_memory_utilization"]))
    findings.extend(check_fabric(fleet))
    findings.extend(check_fabric_subnets(fleet))
    findings.extend(check_fleet_variables(fleet))
    findings.extend(check_cluster_layout(fleet, checks.get("ray_defaults"), checks.get("node_exporter_port"),
                                         checks.get("groups")))
    findings.extend(check_models(fleet, checks["entry_check"], checks["gpu_memory_utilization"], checks["utilization"]))
    findings.extend(check_model_sources(fleet))
    findings.extend(check_placeholders(fleet))
    findings.extend(check_member_versions(fleet))
    findings.extend(check_api_addresses(fleet))
    findings.extend(check_nccl_overrides(fleet))
    findings.extend(check_serving_driver(fleet))
    findings.extend(check_torch(fleet))
    findings.extend(check_firewall(fleet))
    findings.extend(check_role_settings(fleet, named=[(f.host, f.variable) for f in findings]))
    findings.extend(check_host_facts(fleet, checks["forbidden_branches"], checks["nccl_env"]))
    if findings:
        return None, redact_findings(findings, secrets)
    # What preflight accepts is what the roles will do: they read this same plan.
    plan, findings = build_plan(dict((host, fleet_plan.plan_inputs(fleet[host])) for host in fleet),
                                memory_split=checks["gpu_memory_utilization"])
    return (None if findings else plan), redact_findings(findings, secrets)


def check_plan(fleet, roles_dir=None):
    """The findings of planning ``{host: hostvars}`` alone (``build_plan``'s): an inventory the other checks
    accept must be plannable, so a finding here is a gap in those checks."""
    return build_plan(fleet, roles_dir)[1]


def build_plan(fleet, roles_dir=None, memory_split=None):
    """``(plan, findings)``: the plan of ``{host: plan_inputs}`` that preflight stores for the rest of the run, with
    its memory arithmetic (``fleet_plan.build``); None (and the findings that say why) when it cannot be built.
    Entries that do not fit a host are named by the host's model variable (check_models names them first; this
    is the same arithmetic)."""
    options = dict((k, v) for k, v in (("roles_dir", roles_dir), ("memory_split", memory_split)) if v)
    try:
        return fleet_plan.build(fleet, **options), []
    except fleet_plan.MemoryPlanError as exc:
        return None, [Finding(host, _models_var(fleet.get(host) or {}), names, message,
                              "serve fewer or smaller models on this host, shorten max_model_len, or quantize")
                      for host, names, message in exc.problems]
    except fleet_plan.PlanError as exc:
        return None, [Finding("fleet", "fleet plan", None, str(exc),
                              "fix the layout named; preflight's other checks should have named it too "
                              "(report it as a bug of sparkfleet.gb10)")]
