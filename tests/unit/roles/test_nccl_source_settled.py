# -*- coding: utf-8 -*-
"""A rerun skips the nccl role's git checkout and revision record only when what tasks/preflight.yml read says
they would change nothing: HEAD is the pin (a tag's commit, or the pin itself when it is a commit id), no tracked
file changed and that revision is recorded. Anything else (drift, another commit, no record, a branch pin, git
missing, another repository URL) goes through the git module as before."""

import os

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FILES = ["nccl/defaults/main.yml", "nccl/vars/main.yml"]
HEAD = "73c2e616fb45c1e4fd8162c6b9d1e43c493b42c7"
OTHER = "dcc7f2a63b64d416c5948361494688c78cfe50a5"
WORK = "/var/cache/sparkfleet/nccl"


URL = "https://github.com/NVIDIA/nccl.git"


def _read(head=HEAD, pin=HEAD, changes="", changes_rc=0, recorded="git:" + HEAD, head_rc=0, remote=URL):
    """What host_read answers for the tree 'nccl' (the shape of plugins/modules/host_read.py's return)."""
    return {"files": {WORK + "/src/nccl.revision": {"exists": recorded is not None, "type": "file" if recorded else None,
                                                    "content": None if recorded is None else recorded + "\n"}},
            "commands": {"head:nccl": {"rc": head_rc, "stdout": head + "\n" if head_rc == 0 else "", "stderr": ""},
                         "pin:nccl": {"rc": 0 if pin else 1, "stdout": pin + "\n" if pin else "", "stderr": ""},
                         "changes:nccl": {"rc": changes_rc, "stdout": changes, "stderr": ""},
                         "remote:nccl": {"rc": 0, "stdout": remote + "\n", "stderr": ""}}}


CASES = {
    "settled": (_read(), "v2.28.9-1", True),
    "settled_commit_pin": (_read(pin=""), HEAD, True),
    "tracked_change": (_read(changes=" M README.md\n"), "v2.28.9-1", False),
    "other_commit": (_read(head=OTHER), "v2.28.9-1", False),
    "not_recorded": (_read(recorded=None), "v2.28.9-1", False),
    "recorded_other": (_read(recorded="git:" + OTHER), "v2.28.9-1", False),
    "branch_pin": (_read(pin=""), "master", False),
    "other_remote": (_read(remote="https://github.com/someone/nccl.git"), "v2.28.9-1", False),
    "no_checkout": (_read(head="", head_rc=128, pin="", changes_rc=128), "v2.28.9-1", False),
    "git_missing": (_read(head="", head_rc=127, pin="", changes_rc=127), "v2.28.9-1", False),
}


def test_the_git_checkout_is_skipped_only_when_it_would_change_nothing(tmp_path, render_role_vars):
    hosts = {}
    for name, (read, version, dummy) in CASES.items():
        hosts[name] = {"__nccl_host": read, "nccl_work_dir": WORK,
                       "_nccl_src": {"name": "nccl", "kind": "git", "git_version": version, "git_url": URL}}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"sparks": {"hosts": hosts}}}}))
    seen = render_role_vars(inventory, FILES, "{'settled': _nccl_src_state.settled, 'recorded': _nccl_src_state.recorded}")
    assert {h: v["settled"] for h, v in seen.items()} == {h: c[2] for h, c in CASES.items()}
    assert seen["settled"]["recorded"] == "git:" + HEAD
    assert seen["not_recorded"]["recorded"] == ""


def test_preflight_asks_each_tree_in_the_one_call(render_role_vars, tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"sparks": {"hosts": {"h": {
        "_nccl_src_dir": WORK + "/src/nccl", "_nccl_tests_src_dir": WORK + "/src/nccl-tests"}}}}}}))
    read = render_role_vars(inventory, FILES, "_nccl_trees_read")["h"]
    assert [f["path"] for f in read["files"]] == [WORK + "/src/nccl/.git", WORK + "/src/nccl.revision",
                                                  WORK + "/src/nccl-tests/.git", WORK + "/src/nccl-tests.revision"]
    argv = {c["name"]: c["argv"] for c in read["commands"]}
    assert argv["pin:nccl"] == ["git", "-C", WORK + "/src/nccl", "rev-parse", "--verify", "-q", "refs/tags/v2.28.9-1^{commit}"]
    assert argv["pin:nccl-tests"][-1] == "refs/tags/v2.18.3^{commit}"
    assert argv["changes:nccl-tests"] == ["git", "-C", WORK + "/src/nccl-tests", "status", "--porcelain",
                                          "--untracked-files=no"]
    assert argv["remote:nccl"] == ["git", "-C", WORK + "/src/nccl", "remote", "get-url", "origin"]
