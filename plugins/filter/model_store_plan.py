# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
name: model_store_plan
author: sparkfleet.gb10 developers
short_description: Who fetches each model's weights from outside, and who receives them over the fabric
version_added: "1.0.0"
description:
  - "Input is the fleet plan (filter C(sparkfleet.gb10.fleet_plan)): a host holds the models of its C(models)
    there, the entries it is a node of. Only entries with a C(source) count."
  - Entries with the same name and source are one model. Exactly one holder fetches it from outside
    (the first of the model's nodes in the plan, else the first holder in the order of C(addresses)); every
    other holder receives it from that host's fabric address.
  - Every source is checked first (C(plugins/module_utils/model_store.py) check_source); the filter
    fails with every problem of every entry, naming host, entry, key, value and fix.
options:
  _input:
    description: "The fleet plan, C({hosts: {host: {models: [placement, ...]}}, ...})."
    type: dict
    required: true
  addresses:
    description: "C({host: fabric address}) of the hosts of the play, in inventory order."
    type: dict
    required: true
  store_dir:
    description: Directory under which each model gets a directory of its name.
    type: str
    required: true
  require_pinned:
    description: An hf source must name a commit (40 hex digits).
    type: bool
    default: true
  have_token:
    description: A hub token is configured (a gated source needs one).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Plan the fleet's fetches
  ansible.builtin.set_fact:
    _jobs: >-
      {{ hostvars | sparkfleet.gb10.fleet_plan(ansible_play_hosts_all)
         | sparkfleet.gb10.model_store_plan(addresses, '/var/lib/sparkfleet/models') }}
"""

RETURN = r"""
_value:
  description: "C({host: [job]}); a job is C({name, source, dest, fingerprint, fetcher, fetcher_address, holders, role}),
    role C(fetch) or C(receive)."
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import model_store as ms


def model_store_plan(fleet_plan, addresses, store_dir, require_pinned=True, have_token=False):
    hosts = fleet_plan.get("hosts") if isinstance(fleet_plan, dict) else None
    if not isinstance(hosts, dict) or not isinstance(addresses, dict):
        raise AnsibleFilterError("model_store_plan: input must be the fleet plan (filter sparkfleet.gb10.fleet_plan) "
                                 "and addresses {host: fabric address}, got %r, %r" % (fleet_plan, addresses))
    problems = []
    holders = {}
    # The play's hosts only (addresses has one entry each): a host of the plan outside the play
    # (--limit) neither fetches nor receives in this run.
    for host in addresses:
        mine = []
        for place in (hosts.get(host) or {}).get("models") or []:
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


class FilterModule(object):

    def filters(self):
        return {"model_store_plan": model_store_plan}
