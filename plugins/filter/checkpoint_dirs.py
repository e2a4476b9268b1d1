# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter checkpoint_dirs: where a host's checkpoints are on its disk (model_entry.checkpoint_dirs)."""
from __future__ import annotations

DOCUMENTATION = r"""
name: checkpoint_dirs
author: sparkfleet.gb10 developers
short_description: The checkpoint directory of each model entry a host serves from its own disk
version_added: 0.1.0
description:
- For each entry of C(sparkfleet_models) with a C(source), the model store's copy (C(<store_dir>/<name>)); for an
  entry whose C(model) is an absolute path, that path. Entries served from a Hugging Face id without a source are
  left out.
- sparkfleet.gb10.host_facts passes the result to sparkfleet.gb10.gb10_facts (C(model_dirs)), which reads each
  C(config.json) there, so preflight judges the checkpoint's own architecture and model type.
options:
  _input:
    description: The host's model entries (C(sparkfleet_models)).
    type: list
    elements: dict
    required: true
  store_dir:
    description: The model store directory (C(sparkfleet_model_store_dir)).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Where each model of this host is on disk
  ansible.builtin.debug:
    msg: "{{ sparkfleet_models | sparkfleet.gb10.checkpoint_dirs('/var/lib/sparkfleet/models') }}"
"""

RETURN = r"""
_value:
  description: Entry name to directory.
  type: dict
"""

from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import checkpoint_dirs


class FilterModule(object):

    def filters(self):
        return {"checkpoint_dirs": checkpoint_dirs}
