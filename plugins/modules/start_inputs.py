#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: start_inputs
short_description: Checksum what a unit loads at start, as lines for the unit file
extends_documentation_fragment:
  - sparkfleet.gb10.attributes.read_only
description:
  - Reads the sha256 of each file a service loads when it starts (the virtualenv's freeze, the NCCL
    environment file) and returns one comment line per file, C(# loads <path> sha256 <digest>), with
    C(absent) for a file that is not there. The Ray and vLLM units carry these lines, so a new version
    set or NCCL build changes the unit file and restarts the service once, and only then.
  - An empty path is skipped (an input the role was told not to load).
  - Read-only; used by C(sparkfleet.gb10.ray) and C(vllm_service) for their units, and by
    C(vllm_venv) for the inputs of its install stamp (one call for all of them).
version_added: "0.1.0"
author: sparkfleet.gb10 developers (!UNKNOWN)
options:
  paths:
    description: The files the unit loads at start; empty strings are skipped.
    required: true
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Checksum what Ray loads at start
  sparkfleet.gb10.start_inputs:
    paths:
      - /opt/sparkfleet/venv/sparkfleet-freeze.txt
      - /etc/sparkfleet/nccl.env
  register: __ray_head_inputs
# In the unit's template:
#   {% for line in __ray_head_inputs.lines | default([]) %}
#   {{ line }}
#   {% endfor %}
"""

RETURN = r"""
files:
  description: Each path with its sha256 (null when absent).
  returned: always
  type: list
  elements: dict
  sample: [{path: /etc/sparkfleet/nccl.env, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08}]
lines:
  description: One C(# loads <path> sha256 <digest or absent>) line per path.
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule


def start_inputs(paths, digest):
    """``(files, lines)`` for the non-empty ``paths``; ``digest(path)`` is the sha256 of a file."""
    files = []
    for path in paths:
        if not path:
            continue
        files.append({"path": path, "sha256": digest(path) if os.path.isfile(path) else None})
    lines = ["# loads %s sha256 %s" % (f["path"], f["sha256"] or "absent") for f in files]
    return files, lines


def main():
    module = AnsibleModule(argument_spec={"paths": {"type": "list", "elements": "str", "required": True}},
                           supports_check_mode=True)
    files, lines = start_inputs(module.params["paths"], module.sha256)
    module.exit_json(changed=False, files=files, lines=lines)


if __name__ == "__main__":
    main()
