# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""NCCL built once per fleet of identical hosts.

Pure Python (standard library only), used by the ``nccl_build_plan`` filter and unit tested
directly.

Hosts whose NCCL build would be identical form a build group: the same build stamp (NCCL
version, source kind and revision, NVCC gencode, the compiler's version and the make
arguments; the nccl role writes it into every prefix) and the same nccl-tests inputs (the
programs live in the same prefix). :func:`group_key` names the group; :func:`plan` picks one
builder per group, the first of its hosts in play order, and the others receive the
installed prefix from the builder's fabric address instead of compiling.
"""

from __future__ import annotations

import hashlib
import json

# What the nccl role's build stamp (<prefix>/.sparkfleet-build.json) records; a host's build is
# decided by exactly these, so two hosts with equal values build byte-identical libraries.
STAMP_KEYS = ("version", "source", "revision", "gencode", "compiler", "make_args")
# What decides the nccl-tests programs built into <prefix>/bin (besides the NCCL stamp).
TESTS_KEYS = ("revision", "make_args")

ROLES = ("build", "receive", "solo")


def _pick(data, keys, what):
    if not isinstance(data, dict):
        raise ValueError("%s must be a mapping with %s, got %r" % (what, ", ".join(keys), data))
    missing = [k for k in keys if k not in data]
    if missing:
        raise ValueError("%s lacks %s (has %s)" % (what, ", ".join(missing), ", ".join(sorted(data)) or "nothing"))
    empty = [k for k in keys if k != "make_args" and not str(data[k] or "").strip()]
    if empty:
        raise ValueError("%s has an empty %s: the build it describes is unknown" % (what, ", ".join(empty)))
    if not isinstance(data["make_args"], (list, tuple)):
        raise ValueError("%s: make_args must be a list, got %r" % (what, data["make_args"]))
    return dict((k, list(data[k]) if k == "make_args" else str(data[k])) for k in keys)


def group_key(stamp, tests=None):
    """The build group of a host: 16 hex digits from its build stamp and its nccl-tests inputs
    (None when it builds no nccl-tests). Equal keys mean byte-identical prefixes to build."""
    payload = {"nccl": _pick(stamp, STAMP_KEYS, "the build stamp"),
               "tests": None if tests is None else _pick(tests, TESTS_KEYS, "the nccl-tests input")}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def plan(hosts):
    """Who builds NCCL and who receives it.

    ``hosts``: ``{host: {stamp, tests, address, enabled}}`` in play order (``None`` for a host
    that takes no part). A host shares only when ``enabled`` (nccl_build_once) and it has a
    fabric ``address``; the others build for themselves. Returns ``{host: {key, role, builder,
    builder_address, receivers}}``: role ``build`` (builds and serves ``receivers``),
    ``receive`` (gets the prefix from ``builder`` at ``builder_address``) or ``solo`` (builds
    for itself alone: sharing off, no address, or no identical host in the play)."""
    if not isinstance(hosts, dict):
        raise ValueError("the input must be {host: {stamp, tests, address, enabled}}, got %r" % (hosts,))
    keys = {}
    groups = {}
    for host, data in hosts.items():
        if data is None:
            continue
        if not isinstance(data, dict):
            raise ValueError("%s: expected {stamp, tests, address, enabled}, got %r" % (host, data))
        try:
            keys[host] = group_key(data.get("stamp"), data.get("tests"))
        except ValueError as exc:
            raise ValueError("%s: %s" % (host, exc))
        if data.get("enabled") and str(data.get("address") or "").strip():
            groups.setdefault(keys[host], []).append(host)
    out = {}
    for host, key in keys.items():
        members = groups.get(key) or []
        if host not in members or len(members) < 2:
            out[host] = {"key": key, "role": "solo", "builder": host, "builder_address": None, "receivers": []}
            continue
        builder = members[0]
        out[host] = {
            "key": key,
            "role": "build" if host == builder else "receive",
            "builder": builder,
            "builder_address": str(hosts[builder]["address"]).strip(),
            "receivers": members[1:] if host == builder else [],
        }
    return out
