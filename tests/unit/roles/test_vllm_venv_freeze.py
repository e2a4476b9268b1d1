# -*- coding: utf-8 -*-
"""sparkfleet.gb10.vllm_venv's freeze step run by ansible-playbook on localhost against real
virtualenvs: a venv that cannot list what it holds must stop the run (an empty freeze would
"match" every other member's), a good one records its freeze."""

import os
import subprocess
import venv

import pytest

from ansible_local import local_playbook  # tests/unit/ansible_local.py

PLAY = """
- name: Freeze
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run the freeze step of the role
      ansible.builtin.include_role:
        name: sparkfleet.gb10.vllm_venv
        tasks_from: freeze.yml
"""


def _venv(path, dists):
    """A real virtualenv (no pip) holding distributions named ``dists`` (metadata only)."""
    venv.EnvBuilder(with_pip=False).create(str(path))
    out = subprocess.run([str(path / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    for name, version in dists.items():
        info = os.path.join(out, "%s-%s.dist-info" % (name.replace("-", "_"), version))
        os.makedirs(info)
        with open(os.path.join(info, "METADATA"), "w") as handle:
            handle.write("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
    return path


def _run(tmp_path, venv_path, check=False):
    return local_playbook(tmp_path, PLAY, check=check, extra_vars={
        "vllm_venv_path": venv_path, "vllm_venv_drift_check": "false", "vllm_venv_cluster": "test"})


def test_a_venv_with_vllm_records_its_freeze(tmp_path):
    path = _venv(tmp_path / "good", {"vllm": "0.19.0", "ray": "2.60.0"})
    proc = _run(tmp_path, path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = (path / "sparkfleet-freeze.txt").read_text().splitlines()
    assert "ray==2.60.0" in lines and "vllm==0.19.0" in lines


def test_a_venv_without_vllm_stops_with_the_fix(tmp_path):
    path = _venv(tmp_path / "novllm", {"ray": "2.60.0"})
    proc = _run(tmp_path, path)
    assert proc.returncode != 0
    assert "localhost: %s/bin/python lists no vllm distribution" % path in proc.stdout
    assert "Fix: remove %s and re-run the venv stage" % path in proc.stdout


@pytest.mark.parametrize("check", [False, True], ids=["apply", "check-mode"])
def test_a_broken_interpreter_stops_the_run_but_not_a_check_of_a_new_host(tmp_path, check):
    path = tmp_path / "broken"
    (path / "bin").mkdir(parents=True)
    python = path / "bin" / "python"
    python.write_text("#!/bin/sh\necho 'error while loading shared libraries: libpython3.12.so.1.0' >&2\nexit 127\n")
    python.chmod(0o755)
    proc = _run(tmp_path, path, check=check)
    if check:
        # In check mode on a new host the venv does not exist yet: not an error.
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return
    assert proc.returncode != 0
    assert "could not list its distributions (rc 127: error while loading shared libraries" in proc.stdout
