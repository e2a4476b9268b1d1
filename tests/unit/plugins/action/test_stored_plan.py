# -*- coding: utf-8 -*-
"""One plan, whoever builds it: a role run alone (role sparkfleet.gb10.plan, action sparkfleet.gb10.stored_plan)
gives its model entries the same --gpu-memory-utilization as site.yml, where preflight built and stored the plan.
Two sized models on one Spark without a utilization of their own: the memory arithmetic shares the budget between
them; a plan without it would run each with the rule book's default (each alone believing it has the budget)."""

import json
import os
import subprocess

import yaml

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
FIXTURE = os.path.join(REPO, "tests", "fixtures", "gb10", "nominal")
OFFLINE = os.path.join(REPO, "tests", "preflight", "offline.yml")

SIZED = {"checkpoint_format": "bf16", "max_model_len": 8192, "num_layers": 36, "num_kv_heads": 8, "head_dim": 128}
HOST_VARS = {
    "sparkfleet_fabric_subnet": "192.168.100.0/24",
    "sparkfleet_fabric_address": "192.168.100.10",
    "sparkfleet_models": [
        dict(SIZED, name="big", model="/srv/models/big", params_b=14, port=8000),
        dict(SIZED, name="small", model="/srv/models/small", params_b=4, port=8001),
    ],
}

# What the vllm_service role renders for each of the host's services (tasks/preflight.yml: the plan's entry through
# sparkfleet.gb10.vllm_args with the host's facts and the service's cluster layout).
DUMP = """
- name: Write the argv the plan gives each service
  hosts: sparks
  gather_facts: false
  tasks:
    - name: Render the argv of each service from the stored plan
      ansible.builtin.copy:
        content: >-
          {{ dict((inventory_hostname | sparkfleet.gb10.fleet_host(ansible_facts.sparkfleet_plan)).services
                  | map(attribute='name')
                  | zip((inventory_hostname | sparkfleet.gb10.fleet_host(ansible_facts.sparkfleet_plan)).services
                        | map(attribute='entry')
                        | map('sparkfleet.gb10.vllm_args', ansible_facts.gb10, {}, host=inventory_hostname)))
             | to_json }}
        dest: "%(out)s"
        mode: "0600"
      delegate_to: localhost
"""

SITE = """
- name: Preflight, as site.yml runs it first (checks, plan with its memory arithmetic, stored)
  ansible.builtin.import_playbook: %(repo)s/playbooks/preflight.yml
""" + DUMP

ALONE = """
- name: A role run on its own, after the host's facts
  hosts: sparks
  gather_facts: false
  roles:
    - role: sparkfleet.gb10.host_facts
    - role: sparkfleet.gb10.plan
""" + DUMP


def _argv(tmp_path, name, playbook):
    inventory = tmp_path / "inventory"
    (inventory / "host_vars").mkdir(parents=True, exist_ok=True)
    (inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"sparks": {"hosts": {"spark-1": None}}}}}))
    (inventory / "host_vars" / "spark-1.yml").write_text(yaml.safe_dump(HOST_VARS))
    out = tmp_path / (name + ".json")
    play = tmp_path / (name + ".yml")
    play.write_text(playbook % {"repo": REPO, "out": out})
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))
    proc = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", str(inventory), str(play),
                           "-e", "@" + OFFLINE, "-e", "test_fixture_root=" + FIXTURE],
                          cwd=REPO, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())


def _utilization(argv):
    return float(argv[argv.index("--gpu-memory-utilization") + 1])


def test_a_role_run_alone_writes_the_utilization_site_yml_writes(tmp_path):
    site = _argv(tmp_path, "site", SITE)
    alone = _argv(tmp_path, "alone", ALONE)
    assert sorted(site) == ["big", "small"]
    assert alone == site
    shares = dict((name, _utilization(argv)) for name, argv in site.items())
    # The memory arithmetic's shares, not the rule book's default for each: the bigger model gets more, and
    # together they stay within the one budget.
    default = rulebook.setting("gpu_memory_utilization_safe_max")
    assert shares["big"] > shares["small"] > 0
    assert sum(shares.values()) <= default + 1e-9
