# -*- coding: utf-8 -*-
"""sparkfleet.gb10.vllm_venv creates its virtualenv with vllm_venv_python and recreates it when the
existing one was made from another Python major.minor: run by ansible-playbook on localhost, real venvs."""

import sys

from ansible_local import local_playbook  # tests/unit/ansible_local.py

PLAY = """
- name: Interpreter
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run the role's preflight (it reads which Python the virtualenv was made with)
      ansible.builtin.include_role:
        name: sparkfleet.gb10.vllm_venv
        tasks_from: preflight.yml

    - name: Run the interpreter step of the role
      ansible.builtin.include_role:
        name: sparkfleet.gb10.vllm_venv
        tasks_from: interpreter.yml
"""
WANT = "%d.%d" % sys.version_info[:2]


def _run(tmp_path, venv_path):
    proc = local_playbook(tmp_path, PLAY, extra_vars={"vllm_venv_python": sys.executable, "vllm_venv_path": venv_path,
                                                      "vllm_venv_wheelhouse": ""})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _changed(out):
    return int(out.rsplit("changed=", 1)[1].split()[0])


def _version(venv_path):
    for line in (venv_path / "pyvenv.cfg").read_text().splitlines():
        if line.startswith("version"):
            return line.split("=", 1)[1].strip()
    return None


def test_a_new_virtualenv_is_made_once(tmp_path):
    path = tmp_path / "venv"
    assert _changed(_run(tmp_path, path)) == 1
    assert _version(path).startswith(WANT + ".")
    assert (path / "bin" / "python").exists()
    assert _changed(_run(tmp_path, path)) == 0  # the rerun leaves it alone


def test_a_virtualenv_of_another_python_is_recreated_empty(tmp_path):
    path = tmp_path / "venv"
    _run(tmp_path, path)
    cfg = path / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace("version = " + _version(path), "version = 3.10.12"))
    stamp = path / ".sparkfleet-install-stamp"
    stamp.write_text("inputs of an install for 3.10\n")
    assert _changed(_run(tmp_path, path)) == 1
    assert _version(path).startswith(WANT + ".")
    assert not stamp.exists()  # --clear: pip installs everything again for the new interpreter


def test_a_python_that_does_not_run_is_named_before_the_virtualenv_is_made(tmp_path):
    path = tmp_path / "venv"
    proc = local_playbook(tmp_path, PLAY, extra_vars={"vllm_venv_python": str(tmp_path / "no-such-python"),
                                                      "vllm_venv_path": path, "vllm_venv_wheelhouse": ""})
    assert proc.returncode != 0
    assert "vllm_venv_python=%s does not run (rc " % (tmp_path / "no-such-python") in proc.stdout
    assert "point vllm_venv_python at the interpreter to build with" in proc.stdout
    assert not path.exists()
