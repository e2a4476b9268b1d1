# -*- coding: utf-8 -*-
"""The nccl role's source trees as its preflight reads them (plugins/module_utils/nccl_source.py, filters
nccl_source_read and nccl_source_state): the one host_read request for every tree, and what its answer says of
each tree. The role's own rendering on an inventory is tests/unit/roles/test_nccl_source_settled.py."""

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.nccl_source import FilterModule
from ansible_collections.sparkfleet.gb10.plugins.filter.nccl_source import nccl_source_read, nccl_source_state

WORK = "/var/cache/sparkfleet/nccl"
HEAD = "73c2e616fb45c1e4fd8162c6b9d1e43c493b42c7"
URL = "https://github.com/NVIDIA/nccl.git"
GIT = {"name": "nccl", "kind": "git", "git_url": URL, "git_version": "v2.28.9-1", "archive": "", "checksum": "",
       "remote_src": False, "dest": WORK + "/src/nccl"}
ARCHIVE = {"name": "nccl-tests", "kind": "archive", "git_url": "https://github.com/NVIDIA/nccl-tests.git",
           "git_version": "v2.18.3", "archive": "https://example.org/nccl-tests-2.18.3.tar.gz", "checksum": "",
           "remote_src": False, "dest": WORK + "/src/nccl-tests"}


def answer(head=HEAD, pin=HEAD, changes="", changes_rc=0, recorded="git:" + HEAD, mode="0644", remote=URL):
    """host_read's answer for the tree 'nccl' (plugins/modules/host_read.py's shape)."""
    record = {"exists": recorded is not None, "mode": mode if recorded is not None else None,
              "content": None if recorded is None else recorded + "\n"}
    return {"files": {WORK + "/src/nccl.revision": record},
            "commands": {"head:nccl": {"rc": 0 if head else 128, "stdout": head + "\n" if head else "", "stderr": ""},
                         "pin:nccl": {"rc": 0 if pin else 1, "stdout": pin + "\n" if pin else "", "stderr": ""},
                         "changes:nccl": {"rc": changes_rc, "stdout": changes, "stderr": ""},
                         "remote:nccl": {"rc": 0, "stdout": remote + "\n", "stderr": ""}}}


def test_registered():
    assert set(FilterModule().filters()) == {"nccl_source_read", "nccl_source_state"}


def test_the_read_asks_every_tree_and_git_only_of_a_checkout():
    read = nccl_source_read([GIT, ARCHIVE], WORK)
    assert read["files"] == [{"path": WORK + "/src/nccl/.git"}, {"path": WORK + "/src/nccl.revision", "content": True},
                             {"path": WORK + "/src/nccl-tests/.git"},
                             {"path": WORK + "/src/nccl-tests.revision", "content": True}]
    git = ["git", "-C", WORK + "/src/nccl"]
    assert read["commands"] == [
        {"name": "head:nccl", "argv": git + ["rev-parse", "--verify", "-q", "HEAD"]},
        {"name": "pin:nccl", "argv": git + ["rev-parse", "--verify", "-q", "refs/tags/v2.28.9-1^{commit}"]},
        {"name": "changes:nccl", "argv": git + ["status", "--porcelain", "--untracked-files=no"]},
        {"name": "remote:nccl", "argv": git + ["remote", "get-url", "origin"]}]
    assert nccl_source_read([], WORK) == {"files": [], "commands": []}


def test_a_tree_without_its_keys_is_refused():
    with pytest.raises(AnsibleFilterError, match="nccl_source_read: a tree lacks 'dest'"):
        nccl_source_read([{"name": "nccl", "kind": "git"}], WORK)
    with pytest.raises(AnsibleFilterError, match="nccl_source_state: the tree lacks 'name'"):
        nccl_source_state({"kind": "git"}, {}, WORK)


def test_a_checkout_at_its_pin_with_its_revision_recorded_is_settled():
    state = nccl_source_state(GIT, answer(), WORK)
    assert state == {"revision_file": WORK + "/src/nccl.revision", "recorded": "git:" + HEAD, "recorded_mode": "0644",
                     "head": HEAD, "settled": True, "archive_on_host": WORK + "/dist/"}
    # A pin that is the commit itself resolves as no tag.
    assert nccl_source_state(dict(GIT, git_version=HEAD), answer(pin=""), WORK)["settled"] is True


@pytest.mark.parametrize("tree, read", [
    (GIT, answer(changes=" M README.md\n")),
    (GIT, answer(head="dcc7f2a63b64d416c5948361494688c78cfe50a5")),
    (GIT, answer(recorded=None)),
    (GIT, answer(recorded="git:dcc7f2a63b64d416c5948361494688c78cfe50a5")),
    (dict(GIT, git_version="master"), answer(pin="")),
    (GIT, answer(remote="https://github.com/someone/nccl.git")),
    (GIT, answer(head="", pin="", changes_rc=128)),
    (GIT, answer(changes_rc=127)),
    (dict(GIT, kind="archive"), answer()),
    (GIT, {}),
], ids=["tracked_change", "other_commit", "not_recorded", "recorded_other", "branch_pin", "other_remote",
        "no_checkout", "git_missing", "an_archive", "not_read"])
def test_anything_else_goes_through_the_git_module(tree, read):
    assert nccl_source_state(tree, read, WORK)["settled"] is False


def test_the_record_is_read_with_its_mode():
    assert nccl_source_state(GIT, answer(mode="0600"), WORK)["recorded_mode"] == "0600"
    state = nccl_source_state(GIT, answer(recorded=None), WORK)
    assert (state["recorded"], state["recorded_mode"]) == ("", None)
    assert nccl_source_state(ARCHIVE, {}, WORK)["recorded"] == ""


@pytest.mark.parametrize("archive, remote_src, on_host", [
    ("https://example.org/nccl-2.28.9.tar.gz", False, WORK + "/dist/nccl-2.28.9.tar.gz"),
    ("https://example.org/nccl-2.28.9.tar.gz", True, WORK + "/dist/nccl-2.28.9.tar.gz"),
    ("files/nccl-2.28.9.tar.gz", False, WORK + "/dist/nccl-2.28.9.tar.gz"),
    ("/srv/nccl-2.28.9.tar.gz", True, "/srv/nccl-2.28.9.tar.gz"),
    ("/srv/nccl-2.28.9.tar.gz", "yes", "/srv/nccl-2.28.9.tar.gz"),
    ("/srv/nccl-2.28.9.tar.gz", "false", WORK + "/dist/nccl-2.28.9.tar.gz"),
])
def test_where_the_archive_is_on_the_host(archive, remote_src, on_host):
    tree = dict(ARCHIVE, archive=archive, remote_src=remote_src)
    assert nccl_source_state(tree, {}, WORK)["archive_on_host"] == on_host
