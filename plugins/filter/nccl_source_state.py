# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter nccl_source_state: what the nccl role's preflight read says of one source tree."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_source_state
author: sparkfleet.gb10 developers
short_description: What the nccl role's preflight read of the host says of one source tree
version_added: 0.1.0
description:
  - Reads the M(sparkfleet.gb10.host_read) answer to the request of C(sparkfleet.gb10.nccl_source_read) for one
    source tree of the nccl role (NCCL or nccl-tests).
  - "A git tree is C(settled) when its checkout is at its pin (HEAD is the pin's commit, or the pin itself when it
    is a full commit id), was cloned from its C(git_url), has no tracked change, and that revision is recorded:
    the git module would change nothing. A branch pin never resolves, so it is never settled."
  - The logic is C(plugins/module_utils/nccl_source.py).
options:
  _input:
    description: The tree, C({name, kind, git_url, git_version, archive, checksum, remote_src, dest}).
    type: dict
    required: true
  host:
    description: host_read's answer (C({files, commands})); empty when the host was not read.
    type: dict
    required: true
  work_dir:
    description: The role's work directory (C(nccl_work_dir)), which holds C(src/<name>.revision).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Note the revision of a checkout at its pin
  ansible.builtin.set_fact:
    _revision: "git:{{ _state.head }}"
  vars:
    _state: "{{ _nccl_src | sparkfleet.gb10.nccl_source_state(__nccl_host, nccl_work_dir) }}"
  when: _state.settled
"""

RETURN = r"""
_value:
  description: What the read says of the tree.
  type: dict
  contains:
    revision_file:
      description: Where the tree's revision is recorded.
      type: str
    recorded:
      description: The recorded revision (C(git:<commit>) or C(sha256:<archive>)); empty when none.
      type: str
    recorded_mode:
      description: The mode of the revision file (C(0644)); null when it does not exist or was not read.
      type: str
    head:
      description: The checkout's HEAD commit; empty when there is no checkout or the tree is an archive.
      type: str
    settled:
      description: Whether the git module and the revision would change nothing (see the description).
      type: bool
    archive_on_host:
      description: Where the tree's archive is on the host, C(<work_dir>/dist/<file>), or the archive itself with C(remote_src).
      type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import nccl_source


def nccl_source_state(tree, host, work_dir):
    try:
        return nccl_source.state(tree, host, work_dir)
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("nccl_source_state: the tree lacks %s: %r" % (exc, tree))


class FilterModule(object):

    def filters(self):
        return {"nccl_source_state": nccl_source_state}
