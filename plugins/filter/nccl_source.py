# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of the nccl role's source trees: what its preflight asks the host about them (nccl_source_read) and
what the answer says of each tree (nccl_source_state); the logic is plugins/module_utils/nccl_source.py. Each filter
is documented in its own .yml file beside this one."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import nccl_source


def nccl_source_read(trees, work_dir):
    try:
        return nccl_source.read_request(trees, work_dir)
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("nccl_source_read: a tree lacks %s: %r" % (exc, trees))


def nccl_source_state(tree, host, work_dir):
    try:
        return nccl_source.state(tree, host, work_dir)
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("nccl_source_state: the tree lacks %s: %r" % (exc, tree))


class FilterModule(object):

    def filters(self):
        return {"nccl_source_read": nccl_source_read, "nccl_source_state": nccl_source_state}
