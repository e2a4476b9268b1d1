# -*- coding: utf-8 -*-
"""Run a small playbook against localhost with the collection's ansible.cfg (shared by unit tests)."""

import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COLLECTIONS = os.path.join(REPO, "collections")


def local_playbook(tmp_path, text, extra_vars=None, env=None, check=False):
    """Run a playbook written as ``text`` against localhost with the collection's ansible.cfg (real
    ansible-playbook, this interpreter on the 'host'); returns the CompletedProcess."""
    playbook = tmp_path / "play.yml"
    playbook.write_text(text)
    run_env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS)
    run_env.update(env or {})
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=" + sys.executable]
    for key, value in (extra_vars or {}).items():
        cmd += ["-e", "%s=%s" % (key, value)]
    cmd += (["--check"] if check else []) + [str(playbook)]
    return subprocess.run(cmd, cwd=REPO, env=run_env, capture_output=True, text=True, check=False)
