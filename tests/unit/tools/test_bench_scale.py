# -*- coding: utf-8 -*-
"""tools/bench_scale.py: the bench fleet's inventories (SSH and docker exec) and the table's ratio to the smallest
fleet."""

import json
import os
import sys

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import bench_scale  # noqa: E402


def _sim_sparks_vars(*sources):
    found = {}
    for source in sources:
        with open(os.path.join(REPO, source)) as handle:
            found.update(yaml.safe_load(handle)["all"]["children"]["sparks"]["vars"])
    return found


def test_inventory_has_the_sims_host_level_variables_and_no_models(tmp_path):
    path = bench_scale.inventory(str(tmp_path), 8)
    with open(path) as handle:
        data = json.load(handle)
    assert list(data["sparks"]["hosts"]) == ["scale-bench-%d" % i for i in range(1, 9)]
    # over SSH by default, as inventories/sim reaches its hosts: each host's key and entry in the sim's ssh_config
    assert data["sparks"]["vars"] == _sim_sparks_vars("inventories/sim/hosts.yml")
    assert data["sparks"]["vars"]["ansible_connection"] == "ansible.builtin.ssh"
    assert data["sparks"]["vars"]["ansible_ssh_common_args"] == "-F {{ sim_ssh_config }}"
    sparks = tmp_path / "group_vars" / "sparks"
    assert sorted(os.listdir(str(sparks))) == sorted(bench_scale.SIM_GROUP_VARS)
    for name in bench_scale.SIM_GROUP_VARS:
        # each link resolves to the file inventories/sim reads, so the bench runs what make demo runs
        assert os.path.samefile(str(sparks / name), os.path.join(REPO, "inventories", "sim", "group_vars", "sparks", name))
    seen = set()
    for name in bench_scale.SIM_GROUP_VARS:
        with open(str(sparks / name)) as handle:
            seen.update(yaml.safe_load(handle))
    assert "sparkfleet_models" not in seen and "sparkfleet_ray_head_host" not in seen
    assert {"sparkfleet_fabric_address", "nccl_git_url", "nvidia_driver_repository_uris"} <= seen
    assert os.path.samefile(str(tmp_path / "group_vars" / "all"), os.path.join(REPO, "tests", "sim", "group_vars", "all"))


def test_both_connections_share_the_fleet_and_its_group_vars(tmp_path):
    ssh = bench_scale.inventory(str(tmp_path), 2, "ssh")
    docker = bench_scale.inventory(str(tmp_path), 2, "docker")  # the same directory: the group_vars are made once
    assert os.path.dirname(ssh) == os.path.dirname(docker) and ssh != docker
    with open(ssh) as handle:
        over_ssh = json.load(handle)["sparks"]
    with open(docker) as handle:
        over_docker = json.load(handle)["sparks"]
    assert over_ssh["hosts"] == over_docker["hosts"]
    # what -i inventories/sim -i tests/sim/docker-connection.yml gives (bench_engines' docker variant)
    assert over_docker["vars"] == _sim_sparks_vars("inventories/sim/hosts.yml", "tests/sim/docker-connection.yml")
    assert over_docker["vars"]["ansible_connection"] == "community.docker.docker"
    assert sorted(os.listdir(str(tmp_path / "group_vars" / "sparks"))) == sorted(bench_scale.SIM_GROUP_VARS)


def test_an_unknown_connection_is_refused():
    with pytest.raises(ValueError):
        bench_scale.connection_vars("local")
    with pytest.raises(SystemExit):
        bench_scale.main(["--connections", "ssh,ssh"])
    with pytest.raises(SystemExit):
        bench_scale.main(["--connections", "ssh,paramiko"])


def test_fleet_vars_name_the_containers_of_the_inventory():
    fleet = bench_scale.fleet_vars(3)
    assert [p["name"] for p in fleet["sim_platforms"]] == ["scale-bench-1", "scale-bench-2", "scale-bench-3"]
    assert fleet["sim_network"] == "scale-bench-fabric"


def test_table_ratio_is_of_medians_against_the_smallest_fleet_over_the_same_connection():
    results = {
        8: {"ssh": {"first": (200.0, 150.0), "noop": [(60.0, 90.0), (62.0, 96.0), (70.0, 99.0)], "ok": 121,
                    "busy": [0.97, 0.99, 0.98]},
            "docker": {"noop": [(90.0, 100.0), (93.0, 104.0), (99.0, 110.0)], "ok": 121, "busy": [0.9, 0.9, 0.9]}},
        2: {"ssh": {"first": (70.0, 30.0), "noop": [(31.0, 23.0), (30.0, 22.0), (40.0, 24.0)], "ok": 121,
                    "busy": [0.6, 0.7, 0.65]},
            "docker": {"noop": [(33.0, 25.0), (31.0, 26.0), (30.0, 27.0)], "ok": 121, "busy": [0.5, 0.5, 0.5]}},
    }
    lines = bench_scale.table(results, 3, 10).splitlines()
    assert lines[0].startswith("| host-level stages (--tags driver,network,nccl), forks 10 | connection |")
    assert len(lines[1].split("|")) == len(lines[0].split("|"))
    assert lines[2] == "| 2 hosts, 3 runs | ssh | 70.0 s | 30.0 s | 31.0 s | 23.0 s | 11.5 s | 65% | 121 | 1.00x |"
    # the first converge is the first connection's alone
    assert lines[3] == "| 2 hosts, 3 runs | docker | - | 30.0 s | 31.0 s | 26.0 s | 13.0 s | 50% | 121 | 1.00x |"
    # 62.0 / 31.0: medians, not minimums or means; CPU per host 96.0 / 8
    assert lines[4] == "| 8 hosts, 3 runs | ssh | 200.0 s | 60.0 s | 62.0 s | 96.0 s | 12.0 s | 98% | 121 | 2.00x |"
    # 93.0 / 31.0: against the two hosts over docker exec, not over SSH
    assert lines[5] == "| 8 hosts, 3 runs | docker | - | 90.0 s | 93.0 s | 104.0 s | 13.0 s | 90% | 121 | 3.00x |"


def test_busy_share_between_two_readings(tmp_path):
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text("cpu  100 0 100 700 100 0 0 50 40 0\ncpu0 1 2 3\n")
    before = bench_scale.machine_busy(str(stat))
    assert before == (200, 1000)  # idle and iowait are not busy; steal and guest (inside user) not counted
    stat.write_text("cpu  250 0 150 800 100 0 0 90 80 0\n")
    assert bench_scale.busy_share(before, bench_scale.machine_busy(str(stat))) == 200 / 300


def test_forks_come_from_the_environment_else_ansible_cfg(monkeypatch, tmp_path):
    monkeypatch.setenv("ANSIBLE_FORKS", "32")
    assert bench_scale.configured_forks() == 32
    monkeypatch.delenv("ANSIBLE_FORKS")
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\nforks = 17\n")
    monkeypatch.setenv("ANSIBLE_CONFIG", str(cfg))
    assert bench_scale.configured_forks() == 17
    monkeypatch.delenv("ANSIBLE_CONFIG")
    import configparser
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(os.path.join(REPO, "ansible.cfg"))
    assert bench_scale.configured_forks() == parser.getint("defaults", "forks")
