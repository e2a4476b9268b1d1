# -*- coding: utf-8 -*-
"""The corpus of broken inventories, generated from the schema and the rule book.

One valid fleet of eight Sparks of mixed layouts (a 2-node TP model, a 4-node PP model on
Ray, independent models, two models on one host) must pass. Then, one mistake at a time:

- every key of a model entry (``MODEL_ENTRY_SPEC``) with a wrong type, a wrong value and a
  misspelling; every required key left out;
- every cross-host constraint of preflight violated once;
- every rule of the rule book that an inventory can break, broken once (the others are listed
  with the reason preflight cannot see them, and a new rule must be put in one list or the other);
- and several mistakes at once, all reported together.

Each case asserts exactly which findings come back (host and variable), that each names the
host, the variable, the value and the fix, and that nothing else is reported. The checks are the
action's own (``fleet_checks``), so this is the code path ``playbooks/preflight.yml`` runs.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess

import pytest

from ansible_collections.sparkfleet.gb10.plugins.action.fleet_preflight import fleet_checks
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_preflight as fp
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import (
    MINIMUM, MODEL_ENTRY_SPEC, PLACEMENT_KEYS, SECRET_SHOWN)
from ansible_collections.sparkfleet.gb10.plugins.module_utils.redaction import names_secret
from ansible_collections.sparkfleet.gb10.plugins.modules import gb10_facts
from gb10_fixture_params import params_for as fixture_params  # tests/unit/gb10_fixture_params.py

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
FIXTURES = os.path.join(TOP, "tests", "fixtures", "gb10")
ROLE_SPECS = fp.load_role_specs(os.path.join(TOP, "roles"))
CHECKS = fleet_checks(os.path.join(TOP, "roles"))
HOSTS = ["spark-%d" % i for i in range(1, 9)]
SUBNET = "192.168.100.0/24"


def _run(argv):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


_FACTS = {}


def facts(variant="nominal"):
    """ansible_facts.gb10 as host_facts gathers it from a recorded GB10 shape (tests/fixtures/gb10)."""
    if variant not in _FACTS:
        root = os.path.join(FIXTURES, variant)
        params = fixture_params(root, netdev_pattern=rulebook.setting("qsfp_netdev_pattern"))
        _FACTS[variant] = gb10_facts.gather(params, _run, lambda n: n if os.sep in n else shutil.which(n))
    return copy.deepcopy(_FACTS[variant])


# ------------------------------------------------------------------ the valid fleet of eight
TP2 = {"name": "qwen35-122b", "model": "Qwen/Qwen3.5-122B-A10B-FP8", "checkpoint_format": "fp8", "moe": True,
       "tensor_parallel_size": 2, "nodes": ["spark-1", "spark-2"], "executor": "mp", "max_model_len": 65536}
PP4 = {"name": "llama-405b", "model": "hugging-quants/Meta-Llama-3.1-405B-Instruct-AWQ-INT4",
       "checkpoint_format": "awq", "pipeline_parallel_size": 4, "port": 8000,
       "nodes": ["spark-3", "spark-4", "spark-5", "spark-6"], "executor": "ray"}
SOLO = {"name": "qwen3-30b", "model": "Qwen/Qwen3-30B-A3B-FP8", "checkpoint_format": "fp8", "moe": True,
        "port": 8000, "reasoning": True, "reasoning_parser": "qwen3", "tool_call_parser": "hermes",
        "speculative": {"method": "mtp", "num_speculative_tokens": 2}}
SMALL_A = {"name": "gemma4-12b", "model": "google/gemma-4-12b-it", "checkpoint_format": "bf16", "quantization": "fp8",
           "port": 8000, "gpu_memory_utilization": 0.45, "trust_remote_code": True}
SMALL_B = {"name": "nemotron-9b", "model": "nvidia/NVIDIA-Nemotron-Nano-9B-v2", "checkpoint_format": "bf16",
           "mamba": True, "port": 8001, "gpu_memory_utilization": 0.40, "api_key_file": "/etc/sparkfleet/nemotron.env"}


def valid_fleet():
    """Hostvars as fleet_preflight sees them: inventory variables, group_names and the GB10 facts."""
    fleet = {}
    models = {"spark-1": [TP2], "spark-2": [TP2], "spark-3": [PP4], "spark-4": [PP4], "spark-5": [PP4],
              "spark-6": [PP4], "spark-7": [SOLO], "spark-8": [SMALL_A, SMALL_B]}
    for index, host in enumerate(HOSTS):
        groups = ["sparks"]
        if host == "spark-3":
            groups.append("ray_head")
        elif host in ("spark-4", "spark-5", "spark-6"):
            groups.append("ray_workers")
        host_vars = {"group_names": groups, "inventory_hostname": host,
                     "sparkfleet_fabric_subnet": SUBNET, "sparkfleet_fabric_address": "192.168.100.%d" % (10 + index),
                     "sparkfleet_models": copy.deepcopy(models[host]), "ansible_facts": {"gb10": facts()}}
        if len(groups) > 1:
            host_vars.update({"sparkfleet_ray_head_host": "spark-3", "sparkfleet_cluster": "ray-pp4"})
        fleet[host] = host_vars
    return fleet


def _model(fleet, host, index=0):
    return fleet[host]["sparkfleet_models"][index]


def preflight(fleet):
    return fp.check_fleet(fleet, ROLE_SPECS, CHECKS)


def assert_well_formed(finding):
    """host, variable, value and fix, all present, and in the one line the user reads."""
    assert finding.host and finding.variable and finding.problem and finding.fix, finding
    line = str(finding)
    assert line.startswith("%s: %s=%r: " % (finding.host, finding.variable, finding.value)), line
    assert ". Fix: " in line and finding.fix.strip(), line


def test_the_valid_fleet_of_eight_mixed_layouts_passes():
    assert preflight(valid_fleet()) == []


def test_a_follower_may_serve_its_own_model_on_the_port_its_cluster_model_uses_on_the_head():
    """spark-2 follows the 2-node model headless (no API of its own), so port 8000 is free there."""
    fleet = valid_fleet()
    for host in ("spark-1", "spark-2"):
        _model(fleet, host)["gpu_memory_utilization"] = 0.45
    fleet["spark-2"]["sparkfleet_models"].append(dict(SMALL_B, port=8000))
    assert preflight(fleet) == []
    fleet["spark-1"]["sparkfleet_models"].append(dict(SMALL_B, port=8000))
    found = [(f.host, f.variable) for f in preflight(fleet)]
    assert found == [("spark-1", "sparkfleet_models[1] (nemotron-9b).port")]


# ------------------------------------------------------------------ model entry keys, from the schema
# Which host carries the entry a key case mutates, and the entry index on it.
WHERE = ("spark-7", 0)

WRONG_TYPE = {"str": 12345, "path": 12345, "int": "many", "float": "high", "bool": "perhaps", "dict": "mtp",
              "list": "--seed 1"}

# A value of the right type that is still wrong, with the key the finding names (a rule may
# name another key than the one mutated) and extra keys that set the scene.
WRONG_VALUE = {
    "name": ("qwen3 30b!", "name", {}),
    "model": ("", "model", {}),
    "served_name": ("", "served_name", {}),
    "tokenizer": ("  ", "tokenizer", {}),
    "host": ("", "host", {}),
    "port": (70000, "port", {}),
    "checkpoint_format": ("int4", "checkpoint_format", {}),
    "quantization": ("mxfp4", "quantization", {}),
    "reasoning_parser": ("", "reasoning_parser", {}),
    "tool_call_parser": ("", "tool_call_parser", {}),
    "max_model_len": (0, "max_model_len", {}),
    "max_num_seqs": (0, "max_num_seqs", {}),
    "max_num_batched_tokens": (2048, "max_num_batched_tokens", {"mamba": True}),
    "kv_cache_dtype": ("nvfp4", "kv_cache_dtype", {}),
    "source": ({"type": "hf", "repo": "Qwen/Qwen3-235B-A22B-GPTQ-Int4", "revision": "main"}, "source.revision", {}),
    "speculative": ({"method": "draft_model", "model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 2},
                    "speculative.method", {}),
    "tensor_parallel_size": (2, "tensor_parallel_size", {}),
    "pipeline_parallel_size": (0, "pipeline_parallel_size", {}),
    "enable_expert_parallel": (True, "enable_expert_parallel", {"moe": False}),
    "gpu_memory_utilization": (0.95, "gpu_memory_utilization", {}),
    "api_key_file": ("keys/qwen.env", "api_key_file", {}),
    # A key written into the entry by mistake: refused, and never printed (SECRET_SHOWN instead).
    "api_key": ("sk-live-0123456789abcdef", "api_key", {}),
    "api_key_optout_reason": ("   ", "api_key_optout_reason", {"api_key": "none"}),
    "extra_args": (["--port", "9"], "extra_args", {}),
    "enforce_eager": (True, "enforce_eager", {}),
    "allow_enforce_eager_reason": ("   ", "allow_enforce_eager_reason", {}),
    "correctness_check": (False, "correctness_check", {}),
    # A reason while the check is on: the known answers would still be asked.
    "correctness_check_off_reason": ("random test weights", "correctness_check_off_reason", {}),
    "weights_gib": (-1.0, "weights_gib", {}),
    "params_b": (-30.0, "params_b", {}),
    "active_params_b": (-3.0, "active_params_b", {}),
    "num_layers": (0, "num_layers", {}),
    "num_kv_heads": (0, "num_kv_heads", {}),
    "head_dim": (0, "head_dim", {}),
    "overhead_gib": (-3.0, "overhead_gib", {}),
    # Read against what the pinned vLLM serves (plugins/module_utils/vllm_release.py).
    "architecture": ("Gemma4ForConditionalGenerationX", "architecture", {}),
    "model_type": ("gemma4", "model_type", {}),
}
# Keys where every value of the right type is acceptable: only their type can be wrong.
ANY_VALUE = {
    "moe": "a bool; both values are valid models",
    "mamba": "a bool; with prefix caching it raises the max_num_batched_tokens floor (that case is above)",
    "reasoning": "a bool; it changes what clients must send, not the service",
    "enable_prefix_caching": "a bool; both values are valid",
    "trust_remote_code": "a bool; both values are valid",
}


def _misspell(key):
    """Two neighbouring letters swapped, the commonest typo."""
    for i in range(len(key) - 2, 0, -1):
        if key[i] != key[i + 1] and "_" not in key[i:i + 2]:
            return key[:i] + key[i + 1] + key[i] + key[i + 2:]
    return key + "s"


def test_every_key_of_the_schema_has_a_wrong_value_or_a_reason_why_none_exists():
    assert set(WRONG_VALUE) | set(ANY_VALUE) == set(MODEL_ENTRY_SPEC)
    assert not set(WRONG_VALUE) & set(ANY_VALUE)


def _key_cases():
    cases = []
    for key, rule in sorted(MODEL_ENTRY_SPEC.items()):
        value = WRONG_TYPE[rule["type"]]
        shown = SECRET_SHOWN if rule.get("secret") else value
        cases.append(pytest.param(key, {key: value}, (), key, shown, id="%s-wrong-type" % key))
        if key in WRONG_VALUE:
            value, named, scene = WRONG_VALUE[key]
            patch = dict(scene, **{key: value})
            if named.startswith(key + "."):  # a sub-key of a dict: the finding shows the sub-key's value
                value = value[named.split(".", 1)[1]]
            value = SECRET_SHOWN if rule.get("secret") else value
            cases.append(pytest.param(key, patch, (), named, value, id="%s-wrong-value" % key))
        typo = _misspell(key)
        # a misspelt secret key is still a secret: never shown
        cases.append(pytest.param(key, {typo: "x"}, (key,), typo,
                                  SECRET_SHOWN if rule.get("secret") or names_secret(typo) else "x",
                                  id="%s-misspelt-%s" % (key, typo)))
        if rule.get("required"):
            cases.append(pytest.param(key, {}, (key,), key, None, id="%s-missing" % key))
    return cases


@pytest.mark.parametrize("key, patch, remove, named, value", _key_cases())
def test_each_key_mistake_is_found_on_its_host_with_its_value_and_fix(key, patch, remove, named, value):
    fleet = valid_fleet()
    host, index = WHERE
    entry = fleet[host]["sparkfleet_models"][index]
    for gone in remove:
        entry.pop(gone, None)
    entry.update(patch)
    findings = preflight(fleet)
    assert findings, "preflight let %s through" % patch
    for finding in findings:
        assert_well_formed(finding)
        assert finding.host == host, finding
        assert finding.variable.startswith("sparkfleet_models[%d]" % index), finding
    ours = [f for f in findings if f.variable.endswith("." + named)]
    assert len(ours) == 1, findings
    assert ours[0].value == value, ours[0]
    if named != key and not named.startswith(key + "."):
        assert "did you mean '%s'" % key in ours[0].problem or key in ours[0].problem, ours[0]
        if "misspelt" in named or named == _misspell(key):
            assert ours[0].fix == "rename it to '%s'" % key, ours[0]
    # one mistake, one finding (a wrong value may not trip other checks)
    assert len(findings) == 1, findings


# The placement keys (nodes, executor, master_port) live beside the schema's keys in an entry.
PLACEMENT = {
    # key: (wrong type, wrong value)
    "nodes": ("spark-1", ["spark-1", "spark-9"]),
    "executor": (2, "slurm"),
    "master_port": ("29501/tcp", 70000),
}


def _placement_cases():
    cases = []
    for key in PLACEMENT_KEYS:
        wrong_type, wrong_value = PLACEMENT[key]
        cases.append(pytest.param({key: wrong_type}, (), key, wrong_type, id="%s-wrong-type" % key))
        cases.append(pytest.param({key: wrong_value}, (), key, wrong_value, id="%s-wrong-value" % key))
        typo = _misspell(key)
        cases.append(pytest.param({typo: "x"}, (), typo, "x", id="%s-misspelt-%s" % (key, typo)))
    return cases


def test_every_placement_key_is_in_the_corpus():
    assert set(PLACEMENT) == set(PLACEMENT_KEYS)


@pytest.mark.parametrize("patch, remove, named, value", _placement_cases())
def test_each_placement_key_mistake_is_found(patch, remove, named, value):
    """On spark-1, the head of the 2-node model (its follower spark-2 keeps the good entry)."""
    fleet = valid_fleet()
    entry = _model(fleet, "spark-1")
    entry.update(patch)
    findings = preflight(fleet)
    for finding in findings:
        assert_well_formed(finding)
    ours = [f for f in findings if f.host == "spark-1" and f.variable == "sparkfleet_models[0] (qwen35-122b).%s" % named]
    assert len(ours) == 1 and ours[0].value == value, [str(f) for f in findings]
    if named not in PLACEMENT_KEYS:
        key = [k for k in PLACEMENT_KEYS if _misspell(k) == named][0]
        assert ours[0].fix == "rename it to '%s'" % key, ours[0]


def test_misspellings_suggest_the_key():
    fleet = valid_fleet()
    fleet["spark-7"]["sparkfleet_models"][0]["tensor_paralel_size"] = 1
    (finding,) = preflight(fleet)
    assert "did you mean 'tensor_parallel_size'" in finding.problem
    assert finding.fix == "rename it to 'tensor_parallel_size'"


# ------------------------------------------------------------------ fleet-wide variables, from their argument spec
FLEET_SPEC = ROLE_SPECS["preflight"]
WRONG_VARIABLE_TYPE = {"str": {"not": "a string"}, "path": {"not": "a path"}, "int": "many", "bool": "perhaps",
                       "list": {"not": "a list"}, "dict": ["not", "a dict"]}


def _variable_cases():
    cases = []
    for name, spec in sorted(FLEET_SPEC.items()):
        cases.append(pytest.param(name, WRONG_VARIABLE_TYPE[spec.get("type", "str")], name, id="%s-wrong-type" % name))
        if spec.get("choices"):
            cases.append(pytest.param(name, "nope", name, id="%s-wrong-value" % name))
        typo = _misspell(name)
        cases.append(pytest.param(name, "x", typo, id="%s-misspelt-%s" % (name, typo)))
    return cases


@pytest.mark.parametrize("name, value, named", _variable_cases())
def test_each_fleet_variable_mistake_is_found_on_its_host(name, value, named):
    fleet = valid_fleet()
    fleet["spark-7"][named] = value
    findings = preflight(fleet)
    for finding in findings:
        assert_well_formed(finding)
        assert finding.host == "spark-7", [str(f) for f in findings]
    ours = [f for f in findings if f.variable == named]
    assert len(ours) == 1 and ours[0].value == value, [str(f) for f in findings]
    if named != name:
        assert ours[0].fix == "did you mean %s?" % name


def test_a_model_entry_that_is_not_a_mapping_is_reported_once():
    fleet = valid_fleet()
    fleet["spark-8"]["sparkfleet_models"][1] = "nemotron-9b"
    (finding,) = preflight(fleet)
    assert (finding.host, finding.variable, finding.value) == ("spark-8", "sparkfleet_models[1]", "nemotron-9b")


def test_an_executor_from_the_host_is_named_there_not_on_each_model():
    fleet = valid_fleet()
    fleet["spark-8"]["sparkfleet_executor"] = "slurm"
    (finding,) = preflight(fleet)
    assert (finding.host, finding.variable, finding.value) == ("spark-8", "sparkfleet_executor", "slurm")


def test_models_given_as_vllm_service_models_are_checked_under_that_name():
    """vllm_service serves vllm_service_models (default: sparkfleet_models); set directly, it is what preflight checks."""
    fleet = valid_fleet()
    fleet["spark-7"]["vllm_service_models"] = fleet["spark-7"].pop("sparkfleet_models")
    assert preflight(fleet) == []
    fleet["spark-7"]["vllm_service_models"][0]["kv_cache_dtype"] = "nvfp4"
    (finding,) = preflight(fleet)
    assert (finding.host, finding.variable) == ("spark-7", "vllm_service_models[0] (qwen3-30b).kv_cache_dtype")


# ------------------------------------------------------------------ cross-host constraints
def _both(fleet, hosts, **patch):
    for host in hosts:
        for entry in fleet[host]["sparkfleet_models"]:
            entry.update(patch)


def unknown_node(fleet):
    _both(fleet, ["spark-1", "spark-2"], nodes=["spark-1", "spark-22"])


def nodes_not_a_list(fleet):
    _model(fleet, "spark-7")["nodes"] = "spark-7"


def node_listed_twice(fleet):
    _model(fleet, "spark-7")["nodes"] = ["spark-7", "spark-7"]


def entry_on_a_host_outside_its_nodes(fleet):
    fleet["spark-7"]["sparkfleet_models"].append(dict(copy.deepcopy(TP2), port=8001))


def member_lacks_the_entry(fleet):
    fleet["spark-2"]["sparkfleet_models"] = []


def members_differ(fleet):
    _model(fleet, "spark-2")["max_model_len"] = 32768


def duplicate_port_on_a_host(fleet):
    _model(fleet, "spark-8", 1)["port"] = 8000


def duplicate_name_on_a_host(fleet):
    _model(fleet, "spark-8", 1)["name"] = "gemma4-12b"


def member_without_fabric_address(fleet):
    fleet["spark-2"].pop("sparkfleet_fabric_address")


def members_in_different_subnets(fleet):
    # (192.168.101.0/24 is the default subnet of the second half of the port: check_fabric_subnets' finding)
    fleet["spark-2"].update(sparkfleet_fabric_subnet="192.168.102.0/24", sparkfleet_fabric_address="192.168.102.11")


def fabric_address_twice(fleet):
    fleet["spark-8"]["sparkfleet_fabric_address"] = "192.168.100.16"


def fabric_address_outside_subnet(fleet):
    fleet["spark-8"]["sparkfleet_fabric_address"] = "10.0.0.8"


def fabric_address_with_prefix(fleet):
    fleet["spark-8"]["sparkfleet_fabric_address"] = "192.168.100.18/24"


def fabric_address_not_an_address(fleet):
    fleet["spark-8"]["sparkfleet_fabric_address"] = "192.168.100.318"


def fabric_subnet_not_a_subnet(fleet):
    for host in fleet:
        fleet[host]["sparkfleet_fabric_subnet"] = "192.168.100.0/33"


def tp_not_matching_nodes(fleet):
    _both(fleet, ["spark-1", "spark-2"], tensor_parallel_size=1)


def host_in_two_ray_groups(fleet):
    fleet["spark-4"]["group_names"].append("ray_head")


def two_ray_heads(fleet):
    fleet["spark-5"]["group_names"] = ["sparks", "ray_head"]


def ray_head_host_unknown(fleet):
    fleet["spark-6"]["sparkfleet_ray_head_host"] = "spark-33"


def ray_member_in_another_cluster(fleet):
    fleet["spark-6"].update(sparkfleet_cluster="other", sparkfleet_ray_head_host=None)
    fleet["spark-6"]["group_names"] = ["sparks"]


def model_port_on_a_ray_port(fleet):
    _both(fleet, ["spark-3", "spark-4", "spark-5", "spark-6"], port=CHECKS["ray_defaults"]["ray_head"]["gcs"])


def model_port_in_ray_worker_range(fleet):
    _both(fleet, ["spark-3", "spark-4", "spark-5", "spark-6"], port=CHECKS["ray_defaults"]["ray_worker"]["min_worker"] + 100)


def rendezvous_port_on_an_api_port(fleet):
    _both(fleet, ["spark-1", "spark-2"], master_port=8000)


def master_port_wrong_type(fleet):
    _both(fleet, ["spark-1", "spark-2"], master_port="29501/tcp")


def executor_unknown(fleet):
    _both(fleet, ["spark-1", "spark-2"], executor="slurm")


def memory_over_the_ceiling(fleet):
    _model(fleet, "spark-8", 0)["gpu_memory_utilization"] = 0.6


def env_brings_back_flashinfer(fleet):
    fleet["spark-7"]["vllm_service_environment"] = {"VLLM_ATTENTION_BACKEND": "FLASHINFER"}


def api_port_on_node_exporters(fleet):
    _model(fleet, "spark-7", 0)["port"] = 9100  # fleet_health installs node_exporter there by default


def api_port_below_1024(fleet):
    _model(fleet, "spark-7", 0)["port"] = 80


def ray_env_brings_back_fp4_moe(fleet):
    # The ray executor's GPU workers run under the Ray unit's environment, not the vLLM unit's.
    fleet["spark-2"]["ray_environment"] = {"VLLM_USE_FLASHINFER_MOE_FP4": "1"}


# constraint -> the (host, variable) pairs preflight must report, and nothing else
CROSS_HOST = [
    (unknown_node, {("spark-1", "sparkfleet_models[0] (qwen35-122b).nodes"),
                    ("spark-2", "sparkfleet_models[0] (qwen35-122b).nodes")}, "spark-22 (did you mean spark-2?)"),
    (nodes_not_a_list, {("spark-7", "sparkfleet_models[0] (qwen3-30b).nodes")}, "list"),
    (node_listed_twice, {("spark-7", "sparkfleet_models[0] (qwen3-30b).nodes")}, "more than once"),
    (entry_on_a_host_outside_its_nodes, {("spark-7", "sparkfleet_models[1] (qwen35-122b).nodes")}, "not one of"),
    (member_lacks_the_entry, {("spark-2", "sparkfleet_models")}, "missing from this member"),
    (members_differ, {("spark-2", "sparkfleet_models (qwen35-122b).max_model_len")}, "differs"),
    (duplicate_port_on_a_host, {("spark-8", "sparkfleet_models[1] (nemotron-9b).port")}, "already used by gemma4-12b"),
    (duplicate_name_on_a_host, {("spark-8", "sparkfleet_models[1] (gemma4-12b).name")}, "also the name"),
    (member_without_fabric_address, {("spark-2", "sparkfleet_fabric_address")}, "no fabric address"),
    (members_in_different_subnets, {("spark-2", "sparkfleet_fabric_subnet")}, "one fabric subnet"),
    (fabric_address_twice, {("spark-8", "sparkfleet_fabric_address")}, "also used by spark-7"),
    (fabric_address_outside_subnet, {("spark-8", "sparkfleet_fabric_address")}, "outside the fabric subnet"),
    (fabric_address_with_prefix, {("spark-8", "sparkfleet_fabric_address")}, "write the bare address 192.168.100.18"),
    (fabric_address_not_an_address, {("spark-8", "sparkfleet_fabric_address")}, "not an IPv4 address"),
    (fabric_subnet_not_a_subnet, {(", ".join(HOSTS), "sparkfleet_fabric_subnet")}, "not an IPv4 subnet"),
    (tp_not_matching_nodes, {("spark-1", "sparkfleet_models[0] (qwen35-122b).tensor_parallel_size"),
                             ("spark-2", "sparkfleet_models[0] (qwen35-122b).tensor_parallel_size")},
     "TP x PP = 1 but the model spans 2 node(s)"),
    (host_in_two_ray_groups, {("spark-4", "group ray_head / ray_workers"), ("spark-3, spark-4, spark-5, spark-6",
                                                                            "group ray_head")}, "both ray_head"),
    (two_ray_heads, {("spark-3, spark-4, spark-5, spark-6", "group ray_head")}, "2 Ray heads"),
    (ray_head_host_unknown, {("spark-6", "sparkfleet_ray_head_host"),
                             ("spark-3, spark-4, spark-5, spark-6", "sparkfleet_ray_head_host")}, "not in this inventory"),
    (ray_member_in_another_cluster, {("spark-6", "group ray_head / ray_workers")}, "not in the Ray cluster"),
    (model_port_on_a_ray_port, {("spark-3", "sparkfleet_models[0] (llama-405b).port")}, "Ray (ray_head_ports.gcs)"),
    (model_port_in_ray_worker_range, {("spark-3", "sparkfleet_models[0] (llama-405b).port")}, "worker port range"),
    (rendezvous_port_on_an_api_port, {("spark-1", "sparkfleet_models[0] (qwen35-122b).master_port")}, "already used"),
    (master_port_wrong_type, {("spark-1", "sparkfleet_models[0] (qwen35-122b).master_port"),
                              ("spark-2", "sparkfleet_models[0] (qwen35-122b).master_port")}, "must be an integer, got a string"),
    (executor_unknown, {("spark-1", "sparkfleet_models[0] (qwen35-122b).executor"),
                        ("spark-2", "sparkfleet_models[0] (qwen35-122b).executor")}, "not one of mp, ray"),
    (memory_over_the_ceiling, {("spark-8", "sparkfleet_models[*].gpu_memory_utilization")}, "above the ceiling"),
    (env_brings_back_flashinfer, {("spark-7", "vllm_service_environment.VLLM_ATTENTION_BACKEND")}, "attention_backend"),
    (ray_env_brings_back_fp4_moe, {("spark-2", "ray_environment.VLLM_USE_FLASHINFER_MOE_FP4")},
     "flashinfer_moe_fp4_off"),
    (api_port_on_node_exporters, {("spark-7", "sparkfleet_models[0] (qwen3-30b).port")}, "node_exporter"),
    (api_port_below_1024, {("spark-7", "sparkfleet_models[0] (qwen3-30b).port")}, "CAP_NET_BIND_SERVICE"),
]


@pytest.mark.parametrize("mistake, expected, words", CROSS_HOST, ids=[c[0].__name__ for c in CROSS_HOST])
def test_each_cross_host_constraint_violated_once(mistake, expected, words):
    fleet = valid_fleet()
    mistake(fleet)
    findings = preflight(fleet)
    for finding in findings:
        assert_well_formed(finding)
    assert set((f.host, f.variable) for f in findings) == expected, [str(f) for f in findings]
    assert len(findings) == len(expected), [str(f) for f in findings]
    assert any(words in str(f) for f in findings), [str(f) for f in findings]


# ------------------------------------------------------------------ the rule book, each rule broken once
def _on_solo(**patch):
    def mistake(fleet):
        _model(fleet, "spark-7").update(patch)
    return mistake


def _facts(variant, *hosts):
    def mistake(fleet):
        for host in hosts:
            fleet[host]["ansible_facts"] = {"gb10": facts(variant)}
    return mistake


def _env(name, value):
    def mistake(fleet):
        fleet["spark-7"]["vllm_service_environment"] = {name: value}
    return mistake


def _tp2(**patch):
    def mistake(fleet):
        _both(fleet, ["spark-1", "spark-2"], **patch)
    return mistake


def _pp4(**patch):
    def mistake(fleet):
        _both(fleet, ["spark-3", "spark-4", "spark-5", "spark-6"], **patch)
    return mistake


def _var(host, name, value):
    def mistake(fleet):
        fleet[host][name] = value
    return mistake


# rule id -> (mistake, host whose finding names it, variable suffix, words of the finding)
RULE_BROKEN = {
    "gb10_identity": (_on_solo(pipeline_parallel_size=2), "spark-7", ".tensor_parallel_size", "rule gb10_identity"),
    "driver_branch": (_facts("driver_590", "spark-7"), "spark-7", "driver version", "590"),
    "driver_reboot_pending": (_facts("reboot_pending", "spark-7"), "spark-7", "driver version",
                              "rule driver_reboot_pending"),
    "attention_backend": (_env("VLLM_ATTENTION_BACKEND", "FLASHINFER"), "spark-7", "VLLM_ATTENTION_BACKEND",
                          "rule attention_backend"),
    "moe_backend": (_env("VLLM_MOE_BACKEND", "cutlass"), "spark-7", "VLLM_MOE_BACKEND", "rule moe_backend"),
    "flashinfer_moe_fp4_off": (_env("VLLM_USE_FLASHINFER_MOE_FP4", "1"), "spark-7", "VLLM_USE_FLASHINFER_MOE_FP4",
                               "rule flashinfer_moe_fp4_off"),
    "marlin_atomic_add": (_env("VLLM_MARLIN_USE_ATOMIC_ADD", "0"), "spark-7", "VLLM_MARLIN_USE_ATOMIC_ADD",
                          "rule marlin_atomic_add"),
    "cutlass_fp8_disabled_kernels": (_env("VLLM_DISABLED_KERNELS", "MarlinLinearKernel"), "spark-7",
                                     "VLLM_DISABLED_KERNELS", "rule cutlass_fp8_disabled_kernels"),
    "no_enforce_eager": (_on_solo(extra_args=["--enforce-eager"]), "spark-7", ".extra_args", "rule no_enforce_eager"),
    "known_answers": (_on_solo(correctness_check=False), "spark-7", ".correctness_check", "rule known_answers"),
    "quantization_loader": (_on_solo(checkpoint_format="mxfp4"), "spark-7", ".checkpoint_format",
                            "rule quantization_loader"),
    "kv_cache_dtype": (_on_solo(kv_cache_dtype="nvfp4"), "spark-7", ".kv_cache_dtype", "not one of"),
    "mamba_prefix_caching": (_on_solo(mamba=True, max_num_batched_tokens=2048), "spark-7", ".max_num_batched_tokens",
                             "rule mamba_prefix_caching"),
    "speculative_mtp": (_on_solo(speculative={"method": "draft_model", "num_speculative_tokens": 2}), "spark-7",
                        ".speculative.method", "rule speculative_mtp"),
    "gpu_memory_utilization": (_on_solo(gpu_memory_utilization=0.92), "spark-7", ".gpu_memory_utilization",
                               "rule gpu_memory_utilization"),
    "long_context_multinode_utilization": (_tp2(max_model_len=131072, gpu_memory_utilization=0.87), "spark-1",
                                           ".gpu_memory_utilization", "rule long_context_multinode_utilization"),
    "parallelism_across_nodes": (_pp4(pipeline_parallel_size=1, tensor_parallel_size=4), "spark-3",
                                 ".tensor_parallel_size", "rule parallelism_across_nodes"),
    "nccl_ib_transport": (_facts("no_roce", "spark-1", "spark-2"), "spark-1", "sparkfleet_allow_socket_fallback",
                          "GB/s"),
    "torch_cuda_build": (_var("spark-7", "vllm_venv_torch_version", "2.10.0"), "spark-7", "vllm_venv_torch_version",
                         "CPU build"),
    "memory_guard": (_var("spark-7", "memory_guard_term_percent", 12), "spark-7", "memory_guard_term_percent",
                     "rule memory_guard"),
    "unified_memory": (_on_solo(weights_gib=150.0, num_layers=48, num_kv_heads=4, head_dim=128, max_model_len=32768),
                       "spark-7", "sparkfleet_models", "GiB"),
}
# Rules that no inventory mistake preflight can see breaks: the collection applies them itself
# (nothing in inventory sets them), or they are checked elsewhere, named here.
NOT_AN_INVENTORY_MISTAKE = {
    "no_fastsafetensors": "obsolete on the pinned release (rulebook.VERDICTS): it forbids no load format",
    "reasoning_max_tokens": "a client setting; fleet_verify and the readiness probe send enough tokens",
    "drop_page_cache": "the vllm_service unit runs it; no model entry key turns it off",
    "members_drop_page_cache": "the head's vllm_service unit asks its members, from the fleet plan; no inventory value "
                               "turns it off but vllm_service_drop_caches (a role setting)",
    "service_stack_limit": "written into the vllm_service and ray units; no inventory value sets it",
    "privileged_exec_start_pre": "how the unit is written, not an inventory value",
    "vllm_start_timeout": "a unit timeout taken from the rule book by the role defaults",
    "prefix_cache_metrics": "which metrics the verification reads",
    "host_networking": "how containers are started; the collection runs no model containers",
    "triton_ptxas": "done by vllm_venv; TRITON_PTXAS_PATH may point at another CUDA install on purpose",
    "version_pins": "the vllm_venv role and make contract check the pinned versions",
    "cutlass_fp8_patch": "applied to the installed vLLM by vllm_venv, checked by make contract",
    "nccl_sm121": "the nccl role builds and checks the sm_121 SASS (cuobjdump)",
    "fabric_mtu": "qsfp_network proves it with the jumbo DF ping before it keeps the change",
    "qsfp_both_halves": "host facts pick the halves; a down half is a warning of nccl_env, not a mistake",
    "nccl_ib_hca": "computed by nccl_env from the host facts",
    "nccl_gid_index": "computed by nccl_env from the GID table",
    "nccl_conf_ib_disable": "qsfp_network removes the line from /etc/nccl.conf",
    "gpudirect_rdma": "emitted by nccl_env; an override is reported loudly by nccl_env",
    "nccl_p2p": "emitted by nccl_env; an override is reported loudly by nccl_env",
    "fabric_interface_env": "emitted by nccl_env from sparkfleet_fabric_ifname and the facts",
    "vllm_host_ip": "set by the roles from sparkfleet_fabric_address (whose checks are in the cross-host corpus)",
    "ray_memory_monitor": "set by the ray role and nccl_env for every Ray process",
    "nccl_bandwidth_floor": "measured by fleet_verify after the fabric is up",
    "nccl_preload": "written by the nccl role into its environment file; proven inside the units' Python by the GPU gate",
    "nvidia_device_nodes": "a unit the nvidia_driver role installs; the GPU units require it",
    "decode_roofline": "what a measured figure is read against; the entry's active_params_b is judged by its own check",
    "published_figures": "the field's figures, beside which a measured one is reported",
    "kernel_updates": "judged by playbooks/os_update.yml on each host's apt simulation and modinfo, before it changes",
    "secure_boot_modules": "judged by playbooks/os_update.yml on each host's efivarfs, modinfo and mokutil, before it "
                           "changes and before its reboot",
}


def test_every_rule_is_broken_once_or_said_to_be_no_inventory_mistake():
    ids = set(rulebook.RULES_BY_ID)
    assert set(RULE_BROKEN) | set(NOT_AN_INVENTORY_MISTAKE) == ids, sorted(
        ids ^ (set(RULE_BROKEN) | set(NOT_AN_INVENTORY_MISTAKE)))
    assert not set(RULE_BROKEN) & set(NOT_AN_INVENTORY_MISTAKE)


@pytest.mark.parametrize("rule_id", sorted(RULE_BROKEN))
def test_each_rule_broken_once_is_refused(rule_id):
    mistake, host, variable, words = RULE_BROKEN[rule_id]
    fleet = valid_fleet()
    mistake(fleet)
    findings = preflight(fleet)
    for finding in findings:
        assert_well_formed(finding)
    ours = [f for f in findings if f.host == host and variable in f.variable and words in str(f)]
    assert ours, [str(f) for f in findings]


@pytest.mark.parametrize("text, refused", [("false", True), ("no", True), ("0", True), ("true", False), ("yes", False)])
def test_socket_fallback_as_an_ini_inventory_writes_it(text, refused):
    """[sparks:vars] of an INI inventory hands strings over: "false" must not allow the fallback."""
    fleet = valid_fleet()
    for host in ("spark-1", "spark-2"):
        fleet[host]["ansible_facts"] = {"gb10": facts("no_roce")}
        fleet[host]["sparkfleet_allow_socket_fallback"] = text
    found = [(f.host, f.variable) for f in preflight(fleet)]
    assert found == ([("spark-1", "sparkfleet_allow_socket_fallback"), ("spark-2", "sparkfleet_allow_socket_fallback")]
                     if refused else [])


# ------------------------------------------------------------------ many mistakes, all at once
def test_every_mistake_of_a_fleet_is_reported_at_once():
    fleet = valid_fleet()
    # three on one entry, one on another host's entry, one cross-host, one variable, one fact
    _model(fleet, "spark-7").update(kv_cache_dtype="nvfp4", port="8000", enforce_eager=True)
    _model(fleet, "spark-8", 1)["max_num_batched_tokens"] = 1024
    fleet["spark-2"]["sparkfleet_models"] = []
    fleet["spark-5"]["sparkfleet_executor"] = "slurm"
    fleet["spark-4"]["ansible_facts"] = {"gb10": facts("driver_590")}
    findings = preflight(fleet)
    for finding in findings:
        assert_well_formed(finding)
    assert sorted((f.host, f.variable.split(" ")[-1] if "sparkfleet_models[" in f.variable else f.variable)
                  for f in findings) == sorted([
                      ("spark-2", "sparkfleet_models"),
                      ("spark-4", "driver version (nvidia-smi / /proc/driver/nvidia/version)"),
                      ("spark-5", "sparkfleet_executor"),
                      ("spark-7", "(qwen3-30b).enforce_eager"),
                      ("spark-7", "(qwen3-30b).kv_cache_dtype"),
                      ("spark-7", "(qwen3-30b).port"),
                      ("spark-8", "(nemotron-9b).max_num_batched_tokens"),
                  ]), [str(f) for f in findings]


def test_the_filter_the_role_uses_reports_every_problem_of_an_entry_too():
    """One code path: the vllm_args filter (vllm_service) fails with the same problems preflight lists."""
    from ansible.errors import AnsibleFilterError
    from ansible_collections.sparkfleet.gb10.plugins.filter.vllm_args import vllm_args
    entry = dict(SOLO, kv_cache_dtype="nvfp4", port="8000", enforce_eager=True)
    with pytest.raises(AnsibleFilterError) as err:
        vllm_args(entry, facts(), {"nnodes": 1}, host="spark-7")
    lines = str(err.value).splitlines()
    assert len(lines) == 3, lines
    assert all(line.startswith("host spark-7, model qwen3-30b: key '") and ". Fix: " in line for line in lines)
    fleet = valid_fleet()
    _model(fleet, "spark-7").update(kv_cache_dtype="nvfp4", port="8000", enforce_eager=True)
    assert sorted(f.problem for f in preflight(fleet)) == sorted(line.split("': ", 1)[0] and
                                                                 line.split(": ", 2)[2].split(". Fix: ")[0]
                                                                 for line in lines)


def test_minimum_bounds_name_only_schema_keys():
    from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import CLUSTER_SPEC, SPECULATIVE_SPEC
    assert set(MINIMUM) <= set(MODEL_ENTRY_SPEC) | set(CLUSTER_SPEC) | set(SPECULATIVE_SPEC)


# ------------------------------------------------------------------ API key opt-out
def test_api_key_optout_without_reason_is_refused_with_the_other_problems_of_the_entry():
    fleet = valid_fleet()
    host, index = WHERE
    fleet[host]["sparkfleet_models"][index].update({"api_key": "none", "max_model_len": 0})
    findings = preflight(fleet)
    keys = sorted(f.variable.rsplit(".", 1)[1] for f in findings)
    assert keys == ["api_key", "max_model_len"], findings
    ours = [f for f in findings if f.variable.endswith(".api_key")][0]
    assert_well_formed(ours)
    assert ours.host == host and ours.value == "none" and "api_key_optout_reason" in ours.fix


def test_api_key_optout_with_reason_passes_and_is_warned_about_loudly():
    fleet = valid_fleet()
    host, index = WHERE
    fleet[host]["sparkfleet_models"][index].update({"api_key": "none", "api_key_optout_reason": "lab bench, no network"})
    assert preflight(fleet) == []
    lines = fp.optout_warnings(fleet)
    assert len(lines) == 1
    assert lines[0].startswith(host + ": sparkfleet_models[%d]" % index)
    assert "ANYONE" in lines[0] and "lab bench, no network" in lines[0]


def test_a_reason_without_the_optout_and_a_key_file_with_it_are_refused():
    fleet = valid_fleet()
    host, index = WHERE
    fleet[host]["sparkfleet_models"][index]["api_key_optout_reason"] = "forgot api_key: none"
    assert [f.variable.rsplit(".", 1)[1] for f in preflight(fleet)] == ["api_key_optout_reason"]
    fleet = valid_fleet()
    fleet[host]["sparkfleet_models"][index].update({"api_key": "none", "api_key_optout_reason": "open lab",
                                                    "api_key_file": "/etc/sparkfleet/keys/x.env"})
    assert [f.variable.rsplit(".", 1)[1] for f in preflight(fleet)] == ["api_key_file"]
    assert fp.optout_warnings(valid_fleet()) == []
