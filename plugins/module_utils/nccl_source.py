# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The nccl role's source trees (NCCL, nccl-tests) as its preflight reads them from the host, and what that read
says of each. Pure Python, used by the filters nccl_source_read and nccl_source_state; unit tested directly.

A tree is ``{name, kind, git_url, git_version, archive, checksum, remote_src, dest}`` (the role's _nccl_trees);
``kind`` is ``git`` or ``archive``. The preflight asks, in its one host_read call, for each tree's .git directory
and recorded revision (<work_dir>/src/<name>.revision) and, for a git checkout, its HEAD, the pin's commit (a
tag's, or the pin itself when it is a full commit id; a branch never resolves here, so a branch pin always goes
through the git module), its tracked changes and the repository it was cloned from (another git URL goes through
the git module too). A tag moved upstream under the same name is not seen: a pin is a release tag, which NCCL does
not move.
"""

from __future__ import annotations

import os

from ansible.module_utils.parsing.convert_bool import boolean


def revision_file(tree, work_dir):
    """Where a tree's revision (``git:<commit>`` or ``sha256:<archive>``) is recorded."""
    return "%s/src/%s.revision" % (work_dir, tree["name"])


def read_request(trees, work_dir):
    """host_read's ``files`` and ``commands`` for the trees, in their order."""
    files, commands = [], []
    for tree in trees:
        files += [{"path": tree["dest"] + "/.git"}, {"path": revision_file(tree, work_dir), "content": True}]
        if tree["kind"] == "git":
            git = ["git", "-C", tree["dest"]]
            commands += [
                {"name": "head:" + tree["name"], "argv": git + ["rev-parse", "--verify", "-q", "HEAD"]},
                {"name": "pin:" + tree["name"],
                 "argv": git + ["rev-parse", "--verify", "-q", "refs/tags/%s^{commit}" % tree["git_version"]]},
                {"name": "changes:" + tree["name"], "argv": git + ["status", "--porcelain", "--untracked-files=no"]},
                {"name": "remote:" + tree["name"], "argv": git + ["remote", "get-url", "origin"]},
            ]
    return {"files": files, "commands": commands}


def _stdout(answer):
    return str((answer or {}).get("stdout") or "").strip()


def state(tree, host, work_dir):
    """What host_read's answer (``host``, ``{files, commands}``; empty when not read) says of one tree.

    ``recorded``: the revision recorded ('' when none); ``recorded_mode``: its file's mode (None when absent);
    ``head``: the checkout's HEAD ('' when none); ``settled``: a git checkout at its pin, from its URL, without a
    tracked change, with that revision recorded (the git module would change nothing); ``archive_on_host``: where
    the tree's archive is on the host (the downloaded or copied file under <work_dir>/dist, or the archive itself
    with remote_src)."""
    files = (host or {}).get("files") or {}
    commands = (host or {}).get("commands") or {}
    path = revision_file(tree, work_dir)
    record = files.get(path) or {}
    recorded = str(record.get("content") or "").strip()
    name = tree["name"]
    head = _stdout(commands.get("head:" + name))
    changes = commands.get("changes:" + name) or {"rc": 1}
    settled = (tree["kind"] == "git" and len(head) == 40
               and head in (_stdout(commands.get("pin:" + name)), str(tree.get("git_version")))
               and _stdout(commands.get("remote:" + name)) == tree.get("git_url")
               and changes.get("rc") == 0 and _stdout(changes) == ""
               and recorded == "git:" + head)
    archive = str(tree.get("archive") or "")
    on_host = (archive if boolean(tree.get("remote_src") or False, strict=False) and "://" not in archive
               else "%s/dist/%s" % (work_dir, os.path.basename(archive)))
    return {"revision_file": path, "recorded": recorded, "recorded_mode": record.get("mode"), "head": head,
            "settled": settled, "archive_on_host": on_host}
