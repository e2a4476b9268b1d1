# -*- coding: utf-8 -*-
"""playbooks/tasks/roll_batches.yml and playbooks/vars/roll.yml as the roll plays (rolling_update.yml, os_update.yml)
use them, run by ansible-playbook over tests/preflight/valid/ray_head_apart (Ray head spark-1; a TP=2 model with the
ray executor on spark-2 and spark-3), every host on the local connection: the check refuses a batch without the Ray
head, accepts the default batch, and the serial batches Ansible then makes are the ones the filter judged."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan as fp

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
INVENTORY = os.path.join(REPO, "tests", "preflight", "valid", "ray_head_apart")
HOSTS = ["spark-1", "spark-2", "spark-3"]

# The plan as preflight stores it (the stored_plan action builds it from the same variables), the batch check of
# the roll plays, then a serial play like theirs that writes each host's batch.
PLAYBOOK = """
- name: Plan the fleet
  hosts: sparks
  gather_facts: false
  tasks:
    - name: Store the fleet plan
      sparkfleet.gb10.stored_plan:
        hosts: "{{{{ ansible_play_hosts_all }}}}"
        fleet_hosts: "{{{{ groups['sparks'] }}}}"

- name: Check the roll's batches
  hosts: sparks
  gather_facts: false
  any_errors_fatal: true
  vars_files:
    - {repo}/playbooks/vars/roll.yml
  tasks:
    - name: Refuse a batch that splits a multi-node model
      ansible.builtin.import_tasks: {repo}/playbooks/tasks/roll_batches.yml

- name: Roll
  hosts: sparks
  gather_facts: false
  serial: "{{{{ _roll_serial }}}}"
  vars_files:
    - {repo}/playbooks/vars/roll.yml
  tasks:
    - name: Write the batch
      ansible.builtin.copy:
        content: "{{{{ ansible_play_batch | join(',') }}}}"
        dest: "{{{{ out }}}}/{{{{ inventory_hostname }}}}"
        mode: "0644"
"""


def roll(tmp_path, *args):
    playbook = tmp_path / "roll.yml"
    playbook.write_text(PLAYBOOK.format(repo=REPO))
    out = tmp_path / "batches"
    out.mkdir()
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY,
           "-e", "ansible_connection=local", "-e", "ansible_python_interpreter=" + sys.executable,
           "-e", "out=%s" % out] + list(args) + [str(playbook)]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    batches = dict((p.name, p.read_text().split(",")) for p in out.iterdir())
    return proc, batches


def test_the_default_batch_holds_the_model_and_its_ray_head(tmp_path):
    proc, batches = roll(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # roll_serial: the model's nodes and its Ray head, three hosts in one batch, as Ansible made it.
    assert batches == dict((host, HOSTS) for host in HOSTS)
    assert fp.roll_batches(HOSTS, 3) == [HOSTS]


def test_a_batch_without_the_ray_head_is_refused_before_any_batch_runs(tmp_path):
    proc, batches = roll(tmp_path, "-e", "sparkfleet_rolling_serial=2")
    assert proc.returncode != 0 and batches == {}
    text = proc.stdout + proc.stderr
    # spark-3's batch is itself alone: it misses its model's other node and the Ray head.
    assert ("spark-3: model(s) qwen35-122b span hosts outside this batch (spark-3): qwen35-122b needs spark-2 and "
            "spark-1, the head of its Ray cluster (the ray executor runs on it)") in text
    assert "e.g. -e sparkfleet_rolling_serial=3" in text and "its Ray head spark-1 included" in text


@pytest.mark.parametrize("serial", ["2", "3"])
def test_under_limit_the_model_s_nodes_without_their_ray_head_are_refused(tmp_path, serial):
    """--limit spark-2,spark-3: the batch is the model's nodes only, and whatever the serial it lacks the Ray head."""
    proc, batches = roll(tmp_path, "--limit", "spark-2,spark-3", "-e", "sparkfleet_rolling_serial=" + serial)
    assert proc.returncode != 0 and batches == {}
    assert ("spark-2: model(s) qwen35-122b span hosts outside this batch (spark-2, spark-3): qwen35-122b needs "
            "spark-1, the head of its Ray cluster") in proc.stdout + proc.stderr
