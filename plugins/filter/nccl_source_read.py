# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter nccl_source_read: what the nccl role's preflight asks the host about its source trees."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_source_read
author: sparkfleet.gb10 developers
short_description: The host_read request for the nccl role's source trees
version_added: 0.1.0
description:
  - For each source tree of the nccl role (NCCL, nccl-tests), what its preflight asks the host in its one
    M(sparkfleet.gb10.host_read) call, so that a rerun skips the git module and the revision record when they would
    change nothing (filter C(sparkfleet.gb10.nccl_source_state) reads the answer).
  - "Files: the tree's C(.git) directory and its recorded revision (C(<work_dir>/src/<name>.revision), with its
    content). Commands, for a git tree only: C(HEAD), the pin's commit (C(refs/tags/<git_version>^{commit})), the
    tracked changes (C(git status --porcelain --untracked-files=no)) and the C(origin) URL, named
    C(head:<name>), C(pin:<name>), C(changes:<name>) and C(remote:<name>)."
  - The logic is C(plugins/module_utils/nccl_source.py).
options:
  _input:
    description: The trees, each C({name, kind, git_url, git_version, archive, checksum, remote_src, dest}).
    type: list
    elements: dict
    required: true
  work_dir:
    description: The role's work directory (C(nccl_work_dir)), which holds C(src/<name>.revision).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Look for the git checkouts and their revisions
  sparkfleet.gb10.host_read:
    files: "{{ _read.files }}"
    commands: "{{ _read.commands }}"
  vars:
    _read: "{{ _nccl_trees | sparkfleet.gb10.nccl_source_read(nccl_work_dir) }}"
  register: __nccl_host
"""

RETURN = r"""
_value:
  description: C({files, commands}), in host_read's shape, the trees in their order.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import nccl_source


def nccl_source_read(trees, work_dir):
    try:
        return nccl_source.read_request(trees, work_dir)
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("nccl_source_read: a tree lacks %s: %r" % (exc, trees))


class FilterModule(object):

    def filters(self):
        return {"nccl_source_read": nccl_source_read}
