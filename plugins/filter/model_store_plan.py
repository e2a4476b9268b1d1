# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from jinja2 import Undefined

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan as fp
from ansible_collections.sparkfleet.gb10.plugins.module_utils import model_store as ms


def model_store_plan(fleet_plan, addresses, store_dir, require_pinned=True, have_token=False):
    hosts = fleet_plan.get("hosts") if isinstance(fleet_plan, dict) else None
    if not isinstance(hosts, dict) or not isinstance(addresses, dict):
        raise AnsibleFilterError("model_store_plan: input must be the fleet plan (the fact sparkfleet_plan) "
                                 "and addresses {host: fabric address}, got %r, %r" % (fleet_plan, addresses))
    problems = []
    holders = {}
    # The play's hosts only (addresses has one entry each): a host of the plan outside the play
    # (--limit) neither fetches nor receives in this run.
    for host in addresses:
        mine = []
        for place in fp.store_of(hosts.get(host) or {}):
            entry = place["model"]
            if entry.get("source") is None:
                continue
            what = "%s: sparkfleet_models[%d] (%s)" % (host, place["index"], place["name"])
            found = ms.check_source(entry["source"], require_pinned=require_pinned, have_token=have_token)
            problems.extend(p.text(what) for p in found)
            if not found:
                mine.append(place)
        holders[host] = mine
    jobs = ms.plan(holders, addresses, store_dir)
    for host, host_jobs in jobs.items():
        for job in host_jobs:
            if job["role"] == "receive" and not job["fetcher_address"]:
                problems.append("%s: model %s is fetched by %s, which has no sparkfleet_fabric_address to send it from. "
                                "Fix: give %s its fabric address" % (host, job["name"], job["fetcher"], job["fetcher"]))
    if problems:
        raise AnsibleFilterError("\n".join(problems))
    return jobs


def model_store_disk(results, host, reserve=0, store_dir=""):
    """'' when the models fit, else the refusal (host, path, need, free, fix); ``results`` are the
    registered loop results of model_files state=planned (skipped ones are left out)."""
    planned = [r for r in (results or []) if isinstance(r, dict) and not r.get("skipped") and "need_bytes" in r]
    if not planned:
        return ""
    need = sum(int(r["need_bytes"]) for r in planned)
    names = [str((r.get("item") or {}).get("name", "?")) for r in planned]
    return ms.disk_problem(host, planned[0].get("free_path") or store_dir, need, int(planned[0]["free_bytes"]),
                           int(reserve), names) or ""


def model_store_weights(manifests):
    """{model name: bytes of its weight files} from {model name: manifest}."""
    if not isinstance(manifests, dict):
        raise AnsibleFilterError("model_store_weights: input must be {model name: manifest}, got %r" % type(manifests).__name__)
    out = {}
    for name, manifest in manifests.items():
        if not isinstance(manifest, dict):
            raise AnsibleFilterError("model_store_weights: the manifest of %s must be {path: {size, ...}}" % name)
        size = ms.weights_bytes(manifest)
        if size is not None:
            out[name] = size
    return out


def _first_defined(host_vars, names, default):
    """The value of the first of ``names`` a host defines (``hostvars[host]``, templated as Jinja reads it), as
    ``host_vars.a | default(host_vars.b | default(default))`` reads it: a value that templates to undefined counts as
    not set."""
    for name in names:
        if host_vars is not None and name in host_vars:
            value = host_vars[name]
            if not isinstance(value, Undefined):
                return value
    return default


def model_store_addresses(hosts, hostvars):
    """{host: fabric address} of ``hosts`` (the play's), in their order: each one's model_store_fabric_address,
    else its sparkfleet_fabric_address, else ''."""
    return dict((host, _first_defined(hostvars[host] if host in hostvars else None,
                                      ("model_store_fabric_address", "sparkfleet_fabric_address"), ""))
                for host in hosts)


def model_store_manifests(receive_jobs, hostvars, own=None):
    """{model name: manifest} of the models a host holds: ``own`` (the manifests of its fetch plans), and for each
    of its receive jobs the manifest its fetching host read (``hostvars[fetcher]._model_store_manifests``), where
    that host has one."""
    out = dict(own or {})
    for job in receive_jobs or []:
        fetcher = job.get("fetcher")
        manifests = _first_defined(hostvars[fetcher] if fetcher in hostvars else None, ("_model_store_manifests",), {})
        found = (manifests or {}).get(job.get("name"))
        if found:
            out[job["name"]] = found
    return out


def model_store_state_files(jobs, manifests, store_dir, also=None):
    return ms.state_files(jobs, manifests, store_dir, also or [])


class FilterModule(object):

    def filters(self):
        return {
            "model_store_addresses": model_store_addresses,
            "model_store_manifests": model_store_manifests,
            "model_store_plan": model_store_plan,
            "model_store_disk": model_store_disk,
            "model_store_weights": model_store_weights,
            "model_store_state_files": model_store_state_files,
        }
