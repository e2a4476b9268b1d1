# -*- coding: utf-8 -*-
"""vllm_service serves a model with a source from the copy model_store placed, offline."""

import json
import os
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SHA = "0123456789abcdef0123456789abcdef01234567"

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars_files:
    - %(repo)s/roles/vllm_service/defaults/main.yml
    - %(repo)s/roles/vllm_service/vars/main.yml
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: Keep this host's services
      ansible.builtin.copy:
        content: "{{ _vllm_service_mine | to_json }}"
        dest: %(out)s
        mode: "0600"
"""


@pytest.mark.parametrize("entry, model, served_name, stored", [
    ({"name": "q", "model": "Qwen/Qwen3-8B", "checkpoint_format": "bf16",
      "source": {"type": "hf", "repo": "Qwen/Qwen3-8B", "revision": SHA}},
     "/srv/store/q", "Qwen/Qwen3-8B", True),
    ({"name": "q", "model": "Qwen/Qwen3-8B", "served_name": "qwen", "checkpoint_format": "bf16",
      "source": {"type": "dir", "path": "/mnt/nfs/q"}},
     "/srv/store/q", "qwen", True),
    ({"name": "p", "model": "/srv/x", "checkpoint_format": "bf16"}, "/srv/x", None, False),
])
def test_a_model_with_a_source_is_served_from_the_store(tmp_path, entry, model, served_name, stored):
    out = tmp_path / "mine.json"
    play = tmp_path / "play.yml"
    play.write_text(PLAY % {"repo": REPO, "out": out})
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps({"sparkfleet_models": [entry], "sparkfleet_model_store_dir": "/srv/store"}))
    proc = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", "localhost,", str(play),
                           "-e", "@" + str(extra)], cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    mine = json.loads(out.read_text())
    assert len(mine) == 1 and mine[0]["stored"] is stored
    assert mine[0]["entry"]["model"] == model and mine[0]["entry"].get("served_name") == served_name
    assert "source" not in mine[0]["entry"]  # placement and store keys never reach vllm serve
