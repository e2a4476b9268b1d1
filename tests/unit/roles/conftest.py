# -*- coding: utf-8 -*-
"""Renders role variables the way a play would, on an inventory, without touching a host: a play that loads
the given roles' defaults/vars files, stores the fleet plan (role sparkfleet.gb10.plan, a dependency of the roles
that read it) and writes one expression per host as JSON. The role tests judge what the
roles derive (from the fleet plan, the fleet defaults) on real inventories with this."""

import json
import os
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

PLAY = """
- hosts: %(hosts)s
  connection: local
  gather_facts: false
  vars_files: %(vars_files)s
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: Store the fleet plan, as the roles' dependency sparkfleet.gb10.plan does
      ansible.builtin.import_role:
        name: sparkfleet.gb10.plan

    - name: Keep what the roles derive for this host
      ansible.builtin.copy:
        content: "{{ (%(expression)s) | to_json }}"
        dest: "%(out)s/{{ inventory_hostname }}.json"
        mode: "0600"
      delegate_to: localhost
"""


@pytest.fixture
def render_role_vars(tmp_path):
    """``render_role_vars(inventory, files, expression, hosts='sparks', extra_vars=None)`` -> {host: value}.
    ``files``: paths under roles/ (``fleet_verify/vars/main.yml``), loaded in order."""

    def render(inventory, files, expression, hosts="sparks", extra_vars=None):
        out = tmp_path / "rendered"
        out.mkdir(exist_ok=True)
        play = tmp_path / "play.yml"
        play.write_text(PLAY % {"hosts": hosts, "out": out, "expression": expression,
                                "vars_files": json.dumps([os.path.join(REPO, "roles", f) for f in files])})
        argv = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", str(inventory), str(play)]
        if extra_vars is not None:
            extra = tmp_path / "extra_vars.json"
            extra.write_text(json.dumps(extra_vars))
            argv += ["-e", "@" + str(extra)]
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True,
                              env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")), check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        return {p[:-len(".json")]: json.loads((out / p).read_text()) for p in sorted(os.listdir(out))}

    return render
