# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
name: ray_status
author: sparkfleet.gb10 developers
short_description: Read the text of C(ray status) into the cluster's members and resources
version_added: "0.1.0"
description:
  - Parses what C(ray status) prints (Ray 2.60), the node ids under C(Active), C(Pending) and C(Recent failures),
    and the C(used/total) lines under C(Resources).
  - A member whose raylet died simply leaves C(Active); Ray 2.60 does not list it under C(Recent failures)
    (see the recordings under C(tests/fixtures/ray/)), so compare C(active) with the members you expect.
  - Fails on text that has no C(Node status) section (not the output of C(ray status)).
options:
  _input:
    description: The stdout of C(ray status).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Every member is alive
  ansible.builtin.assert:
    that: (__ray.stdout | sparkfleet.gb10.ray_status).active | length == groups['ray_workers'] | length + 1
"""

RETURN = r"""
_value:
  description: The cluster as C(ray status) showed it.
  type: dict
  contains:
    active: {description: Ids of the active nodes (C(node_...)), type: list, elements: str}
    pending: {description: Ids or descriptions of pending nodes, type: list, elements: str}
    failures: {description: Lines under C(Recent failures), type: list, elements: str}
    resources:
      description: "Per resource name (CPU, GPU, memory, object_store_memory, ...), C(used) and C(total)
        as printed (numbers for counts, text such as C(16.15GiB) for sizes)."
      type: dict
    gpus_total: {description: Total GPUs of the cluster (0.0 when none), type: float}
    gpus_used: {description: GPUs in use, type: float}
"""

import re

from ansible.errors import AnsibleFilterError

_EMPTY = re.compile(r"^\((no .*|none)\)$")
_RESOURCE = re.compile(r"^(?P<used>[0-9.]+[A-Za-z]*)/(?P<total>[0-9.]+[A-Za-z]*) (?P<name>\S+)")


def _number(text):
    try:
        return float(text)
    except ValueError:
        return text


def ray_status(text):
    if not isinstance(text, str) or "Node status" not in text:
        raise AnsibleFilterError("ray_status: the input is not the output of `ray status` (no 'Node status' section)")
    sections = {}
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or set(line) <= set("-=") or line.startswith("========"):
            continue
        if raw[:1] not in (" ", "\t"):  # headings start at column 0, their lines are indented
            current = line.rstrip(":")
            sections.setdefault(current, [])
            continue
        if current is not None and not _EMPTY.match(line):
            sections[current].append(line)

    def node_ids(lines):
        # "1 node_<id>": a count and the node type (Ray names each node by its id here).
        return [line.split(None, 1)[1] if line.split(None, 1)[0].isdigit() else line for line in lines]

    resources = {}
    for line in sections.get("Total Usage", []):
        match = _RESOURCE.match(line)
        if match:
            resources[match["name"]] = {"used": _number(match["used"]), "total": _number(match["total"])}
    gpu = resources.get("GPU", {"used": 0.0, "total": 0.0})
    return {
        "active": node_ids(sections.get("Active", [])),
        "pending": node_ids(sections.get("Pending", [])),
        "failures": sections.get("Recent failures", []),
        "resources": resources,
        "gpus_total": float(gpu["total"]),
        "gpus_used": float(gpu["used"]),
    }


class FilterModule:
    def filters(self):
        return {"ray_status": ray_status}
