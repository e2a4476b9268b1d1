# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the vllm_service role makes of a host's services in the fleet plan: one record per unit, where
each endpoint's API key comes from, the secrets files, the controller's copies of the keys, and the keys
read back from the host. Pure Python (filters in plugins/filter/vllm_units.py), unit tested in
tests/unit/plugins/module_utils/test_vllm_units.py; the role's vars/main.yml only calls them.

Where an endpoint's key comes from (``key``), first match wins:

- ``follower``: rank > 0, the unit serves no API;
- ``none``: the entry says ``api_key: none`` (preflight requires a written reason);
- ``file``: the entry's own ``api_key_file`` (``VLLM_API_KEY=...``), used as it is;
- ``inventory``: ``vllm_service_api_key`` (one key for every endpoint of the host);
- ``generated``: a key generated once on the host and kept in ``<secrets dir>/<name>.key``.
"""

from __future__ import annotations

import posixpath
import re

from ansible.module_utils.parsing.convert_bool import boolean

UNIT_DIR = "/etc/systemd/system"
KEYED = ("file", "inventory", "generated")
# Keys the role writes into the service's secrets file (EnvironmentFile) itself.
WRITTEN = ("inventory", "generated")
_VLLM_API_KEY_LINE = re.compile(r"(?m)^[ \t]*(?:export[ \t]+)?VLLM_API_KEY=(.*)$")
_QUOTED = re.compile(r"""^(['"])(.*)\1$""")


def key_source(service, inventory_key):
    """Where the API key of ``service`` (a plan service) comes from: follower, none, file, inventory, generated."""
    model = service["model"]
    if service["rank"] > 0:
        return "follower"
    if str(model.get("api_key", "")).lower() == "none":
        return "none"
    if "api_key_file" in model:
        return "file"
    return "inventory" if inventory_key else "generated"


def page_cache_members(service):
    """The other nodes of a multi-node model whose head ``service`` is (rank 0), each ``{host, address}`` (its fabric
    address, the plan's ``node_addresses``): the head's start asks each of them to drop its page cache and waits
    (rule members_drop_page_cache). ``[]`` for a follower or a single-node service."""
    nodes = service.get("nodes") or []
    if service.get("rank") != 0 or len(nodes) < 2:
        return []
    addresses = service.get("node_addresses") or [None] * len(nodes)
    return [{"host": host, "address": address} for host, address in zip(nodes[1:], addresses[1:])]


def page_cache_heads(models):
    """What a host answers as a member of multi-node models (the fleet plan's ``models`` of the host, its
    placements, ray followers included): ``{models, heads}``, the names of the models it follows and the heads
    (``{host, address}``, each once) whose page-cache drop requests it accepts. Both empty on a host that follows
    no model: it listens for none."""
    names, heads = [], []
    for place in models or []:
        nodes = place.get("nodes") or []
        if place.get("rank", 0) == 0 or len(nodes) < 2:
            continue
        names.append(place["name"])
        head = {"host": nodes[0], "address": (place.get("node_addresses") or [None])[0]}
        if head not in heads:
            heads.append(head)
    return {"models": names, "heads": heads}


def units(services, model_store_dir, secrets_dir, inventory_key=False, hf_token=False, api_guard=True):
    """One record per vLLM unit of the host: the plan service's ``name``, ``entry``, ``cluster``, ``rank``,
    ``nodes``, ``port``, ``served_name``, ``call_address`` and ``unit``, with ``unit_file``, ``key`` (see the module),
    ``env_file`` (the root-only secrets file systemd hands the service: its API key where the role writes it,
    the hub token; ``''`` for none), ``key_file`` (a generated key), ``guarded`` (the API guard middleware
    loads: the endpoint has a key and ``api_guard``) and ``stored`` (the entry has a ``source``: it is served
    offline from ``<model_store_dir>/<name>``, clients still asking by its name) and ``page_cache_members`` (the
    members a head's start asks to drop their page cache, ``page_cache_members``).

    ``inventory_key`` and ``hf_token`` say whether those secrets are set; their values never come here."""
    out = []
    for service in services:
        model = service["model"]
        entry = dict(service["entry"])
        stored = model.get("source") is not None
        if stored:
            entry.update(model=posixpath.join(model_store_dir, model["name"]), served_name=service["served_name"])
        key = key_source(service, inventory_key)
        env_file = posixpath.join(secrets_dir, model["name"] + ".env") if key in WRITTEN or hf_token else ""
        out.append({
            "name": service["name"], "entry": entry, "cluster": service["cluster"], "rank": service["rank"],
            "nodes": service["nodes"], "port": service["port"], "served_name": service["served_name"],
            "call_address": service["call_address"], "unit": service["unit"], "unit_file": "%s/%s.service" % (UNIT_DIR, service["unit"]),
            "key": key, "env_file": env_file, "key_file": posixpath.join(secrets_dir, model["name"] + ".key"),
            "guarded": key in KEYED and boolean(api_guard, strict=False), "stored": stored,
            "page_cache_members": page_cache_members(service),
        })
    return out


def key_sources(units_):
    """Each endpoint whose key is read from a file on the host: ``{name, key, path}`` (a generated key's file,
    or the entry's ``api_key_file``)."""
    return [{"name": u["name"], "key": u["key"],
             "path": u["key_file"] if u["key"] == "generated" else u["entry"]["api_key_file"]}
            for u in units_ if u["key"] in ("file", "generated")]


def api_keys(units_, inventory_key, files):
    """``{name: key}`` of every keyed endpoint whose key is known: the inventory's key, a generated key file's
    text, or the last ``VLLM_API_KEY=`` line of the entry's own file (``export`` and quotes as a shell
    EnvironmentFile writes them). ``files``: what ``host_read`` read of the key files (``{path: {content, ...}}``;
    a file without content is not known)."""
    out = dict((u["name"], inventory_key) for u in units_ if u["key"] == "inventory")
    for source in key_sources(units_):
        text = ((files or {}).get(source["path"]) or {}).get("content")
        if text is None:
            continue
        if source["key"] == "generated":
            out[source["name"]] = text.strip()
            continue
        found = _VLLM_API_KEY_LINE.findall(text)
        value = found[-1].strip() if found else ""
        out[source["name"]] = _QUOTED.sub(r"\2", value)
    return out


def secret_files(units_, secrets_dir, keys, hf_token=""):
    """The secrets directory (root, 0700) and each unit's secrets file (root, 0600, ``secret``): the API key
    where the role writes it, the hub token where one is set (``host_files`` settles them without logging)."""
    out = [{"path": secrets_dir, "state": "directory", "owner": "root", "group": "root", "mode": "0700"}]
    for unit in units_:
        if not unit["env_file"]:
            continue
        content = ("VLLM_API_KEY=%s\n" % keys.get(unit["name"], "")) if unit["key"] in WRITTEN else ""
        content += ("HF_TOKEN=%s\n" % hf_token) if hf_token else ""
        out.append({"path": unit["env_file"], "owner": "root", "group": "root", "mode": "0600", "secret": True,
                    "content": content})
    return out


def controller_key_files(units_, keys_dir, host, keys):
    """The controller's copy of each known key: its directory (0700), then ``<host>-<name>.key`` (0600)."""
    out = [{"path": keys_dir, "state": "directory", "mode": "0700"}]
    for unit in units_:
        if unit["key"] in KEYED and unit["name"] in keys:
            out.append({"path": posixpath.join(keys_dir, "%s-%s.key" % (host, unit["name"])), "mode": "0600",
                        "secret": True, "content": keys[unit["name"]] + "\n"})
    return out
