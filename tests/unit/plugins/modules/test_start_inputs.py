# -*- coding: utf-8 -*-
"""start_inputs: the one probe of what a Ray or vLLM unit loads at start (ray_head, ray_worker and
vllm_service put its lines into their unit files)."""

import hashlib

import pytest

from ansible_local import local_playbook
from ansible_collections.sparkfleet.gb10.plugins.modules.start_inputs import start_inputs


def _sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


@pytest.mark.parametrize("present, empty", [(True, False), (False, False), (True, True)])
def test_lines_name_each_input_with_its_digest_or_absent(tmp_path, present, empty):
    freeze = tmp_path / "sparkfleet-freeze.txt"
    if present:
        freeze.write_text("vllm==0.19.0\n")
    env = tmp_path / "nccl.env"
    env.write_text("NCCL_IB_DISABLE=0\n")
    paths = [str(freeze), "" if empty else str(env)]
    files, lines = start_inputs(paths, _sha256)
    want = ["# loads %s sha256 %s" % (freeze, _sha256(str(freeze)) if present else "absent")]
    if not empty:  # an empty path (no NCCL env file configured) is skipped
        want.append("# loads %s sha256 %s" % (env, _sha256(str(env))))
    assert lines == want
    assert [f["path"] for f in files] == [p for p in paths if p]


def test_a_directory_is_not_an_input_file(tmp_path):
    assert start_inputs([str(tmp_path)], _sha256)[1] == ["# loads %s sha256 absent" % tmp_path]


@pytest.mark.parametrize("check", [False, True])
def test_the_module_answers_alike_in_check_mode_and_changes_nothing(tmp_path, check):
    env = tmp_path / "nccl.env"
    env.write_text("NCCL_IB_DISABLE=0\n")
    out = tmp_path / "lines.txt"
    play = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Checksum
      sparkfleet.gb10.start_inputs:
        paths: ["%(env)s", "", "%(missing)s"]
      register: __inputs
    - name: The unit's comment lines
      ansible.builtin.copy:
        content: |
          {%% for line in __inputs.lines %%}
          {{ line }}
          {%% endfor %%}
        dest: "%(out)s"
        mode: "0600"
      check_mode: false
    - name: Nothing changed
      ansible.builtin.assert:
        that: [__inputs is not changed]
""" % {"env": env, "missing": tmp_path / "missing", "out": out}
    proc = local_playbook(tmp_path, play, check=check)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.read_text() == "# loads %s sha256 %s\n# loads %s sha256 absent\n" % (
        env, _sha256(str(env)), tmp_path / "missing")
