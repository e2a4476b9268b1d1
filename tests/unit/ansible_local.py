# -*- coding: utf-8 -*-
"""Run a small playbook against localhost with the collection's ansible.cfg (shared by unit tests)."""

import json
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


def kept_result(tmp_path, text, extra_vars, secret, env=None):
    """Run the playbook ``text`` as local_playbook does; its last task writes the result it registered, as JSON, to
    the path in the extra variable ``out`` (set here). (The CompletedProcess, that result), once the run passed and
    ``secret`` shows neither in the result nor in the run's output."""
    out = tmp_path / "result.json"
    proc = local_playbook(tmp_path, text, extra_vars=dict(extra_vars, out=str(out)), env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    kept = out.read_text()
    assert secret not in kept and secret not in proc.stdout and secret not in proc.stderr
    return proc, json.loads(kept)
