# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter model_store_weights; its function is in plugins/filter/model_store_plan.py.

A file of its own gives it its own documentation: ansible-doc reads a filter's documentation
from the file that registers it."""
from __future__ import annotations

DOCUMENTATION = r"""
name: model_store_weights
author: sparkfleet.gb10 developers
short_description: The real size of each model's weight files, from the manifests the model store reads
version_added: 1.0.0
description:
- 'Input is C({model name: manifest}), a manifest being C({path: {size, sha256 | git_sha1}}) as C(sparkfleet.gb10.model_files)
  returns it (the hub''s listing at the pinned commit, the source directory, or the stamp of a placed copy). It
  is known before any file is fetched.'
- 'Returns C({model name: bytes}) of the files that hold weights (C(.safetensors), C(.bin), C(.pt), C(.pth), C(.gguf));
  a model whose manifest lists none is left out, so its size stays the inventory''s estimate.'
- The result is what C(sparkfleet.gb10.gpu_memory_utilization) takes as C(weights_on_disk).
options:
  _input:
    description: 'C({model name: manifest}).'
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Size this host's services from the real weights
  ansible.builtin.set_fact:
    _memory: >-
      {{ ansible_facts.gb10 | sparkfleet.gb10.gpu_memory_utilization(services,
           weights_on_disk=manifests | sparkfleet.gb10.model_store_weights) }}
"""

RETURN = r"""
_value:
  description: 'C({model name: bytes}).'
  type: dict
"""

from ansible_collections.sparkfleet.gb10.plugins.filter.model_store_plan import model_store_weights


class FilterModule(object):

    def filters(self):
        return {"model_store_weights": model_store_weights}
