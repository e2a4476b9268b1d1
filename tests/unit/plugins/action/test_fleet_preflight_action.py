# -*- coding: utf-8 -*-
"""The fleet plan preflight stores on every host is plain data. Built from inventory values, it carried
ansible-core's tags (each string with the file and line it came from); a persistent fact cache (jsonfile, which
ansible-runner turns on by default) stored every tag and decoded them all again on each read of a host's
variables, which made a no-op rerun of site.yml through ansible-runner take 99 s instead of 68 s."""

import json
import os
import re
import subprocess

from ansible.module_utils._internal._datatag import AnsibleTagHelper
from ansible._internal._datatag._tags import Origin

from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_plan import plain_data

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
INVENTORY = os.path.join(REPO, "tests", "preflight", "valid", "two_ray_clusters", "hosts.yml")

# The header of every play here: the inventory's sparks, on the controller.
LOCAL_PLAY = """
- hosts: sparks
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
"""

PLAY = LOCAL_PLAY + """  tasks:
    - name: Check and plan the fleet
      sparkfleet.gb10.fleet_preflight:
        hosts: "{{ ansible_play_hosts_all }}"
        fleet_hosts: "{{ groups['sparks'] }}"
      run_once: true
"""


def _tagged(value):
    if AnsibleTagHelper.tags(value):
        return True
    if isinstance(value, dict):
        return any(_tagged(k) or _tagged(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_tagged(v) for v in value)
    return False


def test_plain_data_drops_tags_and_keeps_values():
    where = Origin(path="/inventory/hosts.yml", line_num=3, col_num=5)
    value = {where.tag("spark-1"): {"nodes": [where.tag("spark-1"), "spark-2"], "port": 8000, "ok": True,
                                    "ratio": 0.5, "none": None, "pair": ("a", where.tag("b"))}}
    assert _tagged(value)
    plain = plain_data(value)
    assert plain == {"spark-1": {"nodes": ["spark-1", "spark-2"], "port": 8000, "ok": True, "ratio": 0.5,
                                 "none": None, "pair": ["a", "b"]}}
    assert not _tagged(plain)
    # The exact types: a tagged str subclass would pass isinstance().
    assert type(plain["spark-1"]["ok"]) is bool and type(list(plain)[0]) is str  # pylint: disable=unidiomatic-typecheck


def _run_with_fact_cache(play, tmp_path, *args):
    """ansible-playbook on the inventory with a persistent (jsonfile) fact cache; the cache's directory."""
    cache = tmp_path / "facts"
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="jsonfile",
               ANSIBLE_CACHE_PLUGIN_CONNECTION=str(cache))
    proc = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", INVENTORY, str(play)]
                          + list(args), cwd=REPO, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return cache


def test_the_stored_plan_has_no_tags_in_a_persistent_fact_cache(tmp_path):
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    cache = _run_with_fact_cache(play, tmp_path)
    # One file per host, named by the host after the cache's schema prefix (s1_ in ansible-core 2.19).
    stored = dict((re.sub(r"^s\d+_", "", name), name) for name in os.listdir(str(cache)))
    assert sorted(stored) == ["spark-1", "spark-2", "spark-3", "spark-4"]
    for host, name in stored.items():
        text = (cache / name).read_text()
        # The cache wraps the facts in a JSON string; a tagged value would be stored with its type and tags.
        facts = json.loads(json.loads(text)["__payload__"])
        assert set(facts["sparkfleet_plan"]["hosts"]) == set(stored)
        assert "__ansible_type" not in text, "%s: the stored plan carries tagged values" % host


PLAN_ONLY_PLAY = LOCAL_PLAY + """  roles:
    # A dependency inherits its role's `when`; the play's first host skips it, the others still get the plan.
    - role: sparkfleet.gb10.plan
      when: inventory_hostname != ansible_play_hosts_all[0]

""" + LOCAL_PLAY + """  tasks:
    - name: Keep the plan each host holds after the first play
      ansible.builtin.set_fact:
        __first: "{{ ansible_facts.sparkfleet_plan | default(none) }}"

    - name: Plan again (a second role of the run that reads the plan)
      sparkfleet.gb10.stored_plan:
        hosts: "{{ ansible_play_hosts_all }}"
        fleet_hosts: "{{ groups['sparks'] }}"
      register: __again

    - name: Keep the plan each host holds and what the second planning said
      ansible.builtin.copy:
        content: "{{ {'first': __first, 'plan': ansible_facts.sparkfleet_plan, 'again': __again.msg} | to_json }}"
        dest: "%(out)s/{{ inventory_hostname }}.json"
        mode: "0600"
      delegate_to: localhost
"""


def test_a_role_run_alone_gets_the_plan_of_the_inventory_once(tmp_path):
    """The role sparkfleet.gb10.plan (a dependency of every role that reads the plan) builds the plan preflight would
    (the same function, the whole group sparks) and hands it to every host, as plain data; a later reader in the
    same run finds it stored and does not plan again."""
    from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan as fp
    from inventory_loader import load_fleet

    play = tmp_path / "play.yml"
    out = tmp_path / "out"
    out.mkdir()
    play.write_text(PLAN_ONLY_PLAY % {"out": out})
    cache = _run_with_fact_cache(play, tmp_path, "--limit", "spark-3,spark-4")
    fleet = load_fleet(os.path.dirname(INVENTORY), fp.PLAN_INPUTS)
    expected = fp.build(dict((h, fp.plan_inputs(v)) for h, v in fleet.items()))
    seen = dict((name[:-5], json.loads((out / name).read_text())) for name in os.listdir(str(out)))
    assert sorted(seen) == ["spark-3", "spark-4"]
    for host, got in seen.items():
        # Under --limit the whole group is planned: spark-3's cluster keeps its members.
        assert got["plan"] == json.loads(json.dumps(expected)), host
    # spark-3, the first host, skipped the role: it plans in the second play; spark-4 had it from the first.
    assert seen["spark-3"]["first"] is None and seen["spark-4"]["first"] == seen["spark-4"]["plan"]
    assert seen["spark-3"]["again"].startswith("Planned ")
    assert seen["spark-4"]["again"] == "The fleet plan of this run is stored on this host"
    for name in os.listdir(str(cache)):
        assert "__ansible_type" not in (cache / name).read_text()
