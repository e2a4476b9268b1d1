# -*- coding: utf-8 -*-
"""The corpus widened: more kinds of mistakes, generated from the schemas themselves.

test_preflight_corpus.py holds the valid fleet of eight Sparks and one mistake per model entry
key, placement key, cross-host constraint and rule of the rule book. This file adds, each case
derived from a schema so that a key added later is covered without editing the test:

- every variable of every role (``roles/*/meta/argument_specs.yml``) with a value of the wrong
  type, a YAML boolean where text is meant, a value outside its choices and a misspelt name;
- every key of a model entry with a value of each other type (lists and mappings included);
- every key of a model source (``SOURCE_SPEC``) for each source type: wrong type, wrong value,
  misspelt, missing where the type needs it, and given to a type that does not read it;
- every key of ``speculative`` (``SPECULATIVE_SPEC``): wrong type, wrong value, misspelt, missing;
- the Ray port maps a host may override (keys from the roles' defaults);
- secrets (``no_log`` variables, ``secret`` keys, and misspellings of them) never shown;
- and many of these mistakes on several hosts at once, all reported in one go.

Every finding must name the host, the variable, the value and the fix, and be the only one.
"""

from __future__ import annotations

import copy

import pytest

import test_preflight_corpus as corpus
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import (
    CLUSTER_SPEC, MODEL_ENTRY_SPEC, PLACEMENT_KEYS, SECRET_SHOWN, SPECULATIVE_SPEC, is_secret)
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_store import (
    REQUIRED_BY_TYPE, SOURCE_SPEC, SOURCE_TYPES, TYPE_KEYS)

valid_fleet = corpus.valid_fleet
preflight = corpus.preflight
assert_well_formed = corpus.assert_well_formed
_misspell = corpus._misspell
ROLE_SPECS = corpus.ROLE_SPECS
HOST = "spark-7"  # serves one model alone, is in no Ray cluster
ENTRY = "sparkfleet_models[0] (qwen3-30b)"


def _only(findings, host, variable, value):
    """Exactly one finding, on that host and variable, showing that value, well formed."""
    lines = [str(f) for f in findings]
    assert len(findings) == 1, lines
    (finding,) = findings
    assert_well_formed(finding)
    assert (finding.host, finding.variable) == (host, variable), lines
    assert finding.value == value, lines
    return finding


# ------------------------------------------------------------------ every role variable
def _variables():
    """``{name: (role, spec)}``; a variable several roles document is taken from the first."""
    found = {}
    for role, options in sorted(ROLE_SPECS.items()):
        for name, spec in sorted(options.items()):
            found.setdefault(name, (role, spec))
    return found


VARIABLES = _variables()
# A value of each type that Ansible's argument spec (or preflight) refuses for it.
WRONG_VARIABLE_TYPE = {"str": {"not": "a string"}, "path": ["not", "a path"], "int": "many", "float": "high",
                       "bool": "perhaps", "list": {"not": "a list"}, "dict": "many"}


def test_every_variable_type_has_a_wrong_value():
    assert set(spec.get("type", "str") for _role, spec in VARIABLES.values()) <= set(WRONG_VARIABLE_TYPE)


def _secret(spec):
    return bool(spec.get("no_log"))


def _variable_cases():
    cases = []
    for name, (_role, spec) in sorted(VARIABLES.items()):
        kind = spec.get("type", "str")
        cases.append(pytest.param(name, name, WRONG_VARIABLE_TYPE[kind], id="%s-wrong-type" % name))
        if kind in ("str", "path"):
            # yes/no/on/off/true unquoted: YAML makes a boolean, Ansible would quietly render 'True'.
            cases.append(pytest.param(name, name, True, id="%s-yaml-bool" % name))
        if spec.get("choices"):
            cases.append(pytest.param(name, name, "nope", id="%s-wrong-value" % name))
        cases.append(pytest.param(name, _misspell(name), "x", id="%s-misspelt" % name))
    return cases


@pytest.mark.parametrize("name, written, value", _variable_cases())
def test_each_variable_of_each_role_with_a_mistake(name, written, value):
    fleet = valid_fleet()
    fleet[HOST][written] = value
    findings = preflight(fleet)
    # A misspelt name nobody reads is hidden when it reads like a secret's (..._token_fiel): it may hold one.
    shown = SECRET_SHOWN if _secret(VARIABLES[name][1]) or (written != name and is_secret(written)) else value
    finding = _only(findings, HOST, written, shown)
    if written != name:
        assert finding.fix == "did you mean %s?" % name, finding
    if shown == SECRET_SHOWN:
        assert repr(value) not in str(finding) and "x'" not in str(finding).split(": ", 1)[1], finding


def test_secret_variables_are_marked_no_log():
    """The variables holding a key or a token are no_log, so preflight (and Ansible) hide them."""
    secrets = [name for name, (_role, spec) in VARIABLES.items()
               if spec.get("type", "str") == "str" and (name.endswith("_token") or name.endswith("_api_key"))]
    assert secrets, "no secret variable found"
    assert [name for name in secrets if not _secret(VARIABLES[name][1])] == []


@pytest.mark.parametrize("name", sorted(n for n, (_r, s) in VARIABLES.items() if _secret(s)))
def test_a_secret_variable_is_never_shown(name):
    secret = "sk-live-secret-%s" % name
    for written, value in ((name, {"key": secret}), (_misspell(name), secret), (name, [secret])):
        fleet = valid_fleet()
        fleet[HOST][written] = value
        findings = preflight(fleet)
        assert findings and all(secret not in str(f) and secret not in repr(f.as_dict()) for f in findings), findings
        assert [f.value for f in findings] == [SECRET_SHOWN]


# ------------------------------------------------------------------ model entry keys, every other type
SAMPLES = {"str": "x", "int": 7, "float": 0.5, "bool": True, "list": ["x"], "dict": {"x": 1}}
ACCEPTS = {"str": ("str",), "path": ("str",), "int": ("int",), "float": ("int", "float"), "bool": ("bool",),
           "list": ("list",), "dict": ("dict",)}


def _entry_type_cases():
    cases = []
    types = dict((key, rule["type"]) for key, rule in MODEL_ENTRY_SPEC.items())
    types.update(nodes="list", executor=CLUSTER_SPEC["executor"]["type"], master_port=CLUSTER_SPEC["master_port"]["type"])
    assert set(PLACEMENT_KEYS) <= set(types)
    for key, kind in sorted(types.items()):
        for sample, value in sorted(SAMPLES.items()):
            if sample not in ACCEPTS[kind]:
                cases.append(pytest.param(key, value, id="%s-%s" % (key, sample)))
    return cases


@pytest.mark.parametrize("key, value", _entry_type_cases())
def test_each_entry_key_with_each_other_type(key, value):
    fleet = valid_fleet()
    corpus._model(fleet, HOST)[key] = value
    findings = preflight(fleet)
    secret = MODEL_ENTRY_SPEC.get(key, {}).get("secret")
    assert len(findings) == 1, [str(f) for f in findings]
    (finding,) = findings
    assert_well_formed(finding)
    assert finding.host == HOST and finding.variable.endswith("." + key), finding
    assert finding.value == (SECRET_SHOWN if secret else value), finding


@pytest.mark.parametrize("key", sorted(k for k, rule in MODEL_ENTRY_SPEC.items() if rule.get("secret")))
def test_a_misspelt_secret_key_of_an_entry_is_not_shown(key):
    fleet = valid_fleet()
    corpus._model(fleet, HOST)[_misspell(key)] = "sk-live-0123456789"
    finding = _only(preflight(fleet), HOST, "%s.%s" % (ENTRY, _misspell(key)), SECRET_SHOWN)
    assert finding.fix == "rename it to '%s'" % key and "sk-live" not in str(finding)


# ------------------------------------------------------------------ the model source, per type
GOOD_SOURCE = {
    "hf": {"type": "hf", "repo": "Qwen/Qwen3-30B-A3B-FP8", "revision": "0123456789abcdef0123456789abcdef01234567",
           "allow_patterns": ["*.safetensors", "*.json"], "ignore_patterns": ["original/"], "gated": False},
    "dir": {"type": "dir", "path": "/srv/models/qwen3-30b"},
    "archive": {"type": "archive", "url": "https://models.lab.example/qwen3-30b.tar.gz", "sha256": "ab" * 32},
}
# A value of the right type that preflight must still refuse, per key of SOURCE_SPEC.
SOURCE_WRONG_VALUE = {
    "type": "git",
    "repo": "Qwen3-30B-A3B-FP8",
    "revision": "main",
    "allow_patterns": ["*.safetensors", 7],
    "ignore_patterns": [None],
    "gated": True,  # without model_store_hf_token
    "path": "models/qwen3-30b",
    "url": "ftp://models.lab.example/qwen3-30b.tar.gz",
    "sha256": "abc123",
}


def test_the_source_cases_cover_the_schema():
    assert set(GOOD_SOURCE) == set(SOURCE_TYPES) == set(TYPE_KEYS)
    assert set(SOURCE_WRONG_VALUE) == set(SOURCE_SPEC)
    for kind, source in GOOD_SOURCE.items():
        assert set(REQUIRED_BY_TYPE[kind]) <= set(source) <= set(TYPE_KEYS[kind]) | {"type"}
    assert set(k for keys in TYPE_KEYS.values() for k in keys) | {"type"} == set(SOURCE_SPEC)


@pytest.mark.parametrize("kind", sorted(GOOD_SOURCE))
def test_each_good_source_passes(kind):
    fleet = valid_fleet()
    corpus._model(fleet, HOST)["source"] = copy.deepcopy(GOOD_SOURCE[kind])
    assert preflight(fleet) == []


def _source_cases():
    cases = []
    for kind in sorted(GOOD_SOURCE):
        for key in ("type",) + TYPE_KEYS[kind]:
            rule = SOURCE_SPEC[key]
            cases.append(pytest.param(kind, {key: corpus.WRONG_TYPE[rule["type"]]}, (), key,
                                      corpus.WRONG_TYPE[rule["type"]], id="%s-%s-wrong-type" % (kind, key)))
            wrong = SOURCE_WRONG_VALUE[key]
            cases.append(pytest.param(kind, {key: wrong}, (), key, wrong, id="%s-%s-wrong-value" % (kind, key)))
            typo = _misspell(key)
            cases.append(pytest.param(kind, {typo: GOOD_SOURCE[kind].get(key, "x")}, (key,), typo,
                                      GOOD_SOURCE[kind].get(key, "x"), id="%s-%s-misspelt" % (kind, key)))
            if key in REQUIRED_BY_TYPE[kind]:
                cases.append(pytest.param(kind, {}, (key,), key, None, id="%s-%s-missing" % (kind, key)))
        for key in sorted(set(SOURCE_SPEC) - set(TYPE_KEYS[kind]) - {"type"}):
            other = [GOOD_SOURCE[t][key] for t in sorted(GOOD_SOURCE) if key in GOOD_SOURCE[t]]
            value = other[0] if other else ["*.bin"]
            cases.append(pytest.param(kind, {key: value}, (), key, value, id="%s-%s-foreign" % (kind, key)))
    return cases


def _nested_mistake(key, good, spec, patch, remove, named, value):
    """The entry's ``key`` mapping (source, speculative) made from ``good`` with keys removed and
    ``patch`` applied: exactly one finding, naming the key's path and value; a misspelt key's fix
    names the key it was meant to be."""
    fleet = valid_fleet()
    mapping = copy.deepcopy(good)
    for name in remove:
        mapping.pop(name)
    mapping.update(patch)
    corpus._model(fleet, HOST)[key] = mapping
    finding = _only(preflight(fleet), HOST, "%s.%s.%s" % (ENTRY, key, named), value)
    if named not in spec:
        wanted = [k for k in spec if _misspell(k) == named][0]
        assert finding.fix == "rename it to '%s'" % wanted, finding


@pytest.mark.parametrize("kind, patch, remove, named, value", _source_cases())
def test_each_source_key_mistake_is_found_with_its_value_and_fix(kind, patch, remove, named, value):
    _nested_mistake("source", GOOD_SOURCE[kind], SOURCE_SPEC, patch, remove, named, value)


def test_a_gated_source_passes_with_a_token_and_the_token_is_never_shown():
    fleet = valid_fleet()
    corpus._model(fleet, HOST)["source"] = dict(GOOD_SOURCE["hf"], gated=True)
    fleet[HOST]["model_store_hf_token"] = "hf_live_token_0123"
    assert preflight(fleet) == []
    fleet[HOST]["model_store_require_pinned"] = "false"  # an INI inventory's string
    corpus._model(fleet, HOST)["source"]["revision"] = "main"
    assert preflight(fleet) == []


# ------------------------------------------------------------------ speculative decoding, from its schema
SPECULATIVE_GOOD = {"method": "mtp", "num_speculative_tokens": 2, "model": "Qwen/Qwen3-30B-A3B-MTP"}
SPECULATIVE_WRONG_VALUE = {"method": "draft_model", "num_speculative_tokens": 0, "model": " "}


def test_the_speculative_cases_cover_the_schema():
    assert set(SPECULATIVE_GOOD) == set(SPECULATIVE_WRONG_VALUE) == set(SPECULATIVE_SPEC)


def _speculative_cases():
    cases = []
    for key, rule in sorted(SPECULATIVE_SPEC.items()):
        cases.append(pytest.param({key: corpus.WRONG_TYPE[rule["type"]]}, (), key, corpus.WRONG_TYPE[rule["type"]],
                                  id="%s-wrong-type" % key))
        cases.append(pytest.param({key: SPECULATIVE_WRONG_VALUE[key]}, (), key, SPECULATIVE_WRONG_VALUE[key],
                                  id="%s-wrong-value" % key))
        cases.append(pytest.param({_misspell(key): SPECULATIVE_GOOD[key]}, (key,), _misspell(key), SPECULATIVE_GOOD[key],
                                  id="%s-misspelt" % key))
        if rule.get("required"):
            cases.append(pytest.param({}, (key,), key, None, id="%s-missing" % key))
    return cases


@pytest.mark.parametrize("patch, remove, named, value", _speculative_cases())
def test_each_speculative_key_mistake(patch, remove, named, value):
    _nested_mistake("speculative", SPECULATIVE_GOOD, SPECULATIVE_SPEC, patch, remove, named, value)


# ------------------------------------------------------------------ the Ray port maps a host may override
RAY_HOSTS = {"ray_head": "spark-3", "ray_worker": "spark-4"}


def _ray_ports(role):
    return dict(corpus.CHECKS["ray_defaults"][role])


def _ray_port_cases():
    cases = []
    for role in sorted(RAY_HOSTS):
        defaults = _ray_ports(role)
        assert defaults, "roles/%s/defaults/main.yml has no %s_ports" % (role, role)
        variable = "%s_ports" % role
        for key in sorted(defaults):
            cases.append(pytest.param(role, {key: "many"}, (), "%s.%s" % (variable, key), "many",
                                      id="%s-%s-wrong-type" % (role, key)))
            cases.append(pytest.param(role, {key: 70000}, (), "%s.%s" % (variable, key), 70000,
                                      id="%s-%s-out-of-range" % (role, key)))
            cases.append(pytest.param(role, {_misspell(key): defaults[key]}, (key,), "%s.%s" % (variable, _misspell(key)),
                                      defaults[key], id="%s-%s-misspelt" % (role, key)))
        cases.append(pytest.param(role, {"min_worker": defaults["max_worker"] + 1}, (), "%s.min_worker" % variable,
                                  defaults["max_worker"] + 1, id="%s-worker-range-reversed" % role))
        first, second = sorted(k for k in defaults if k not in ("min_worker", "max_worker"))[:2]
        cases.append(pytest.param(role, {second: defaults[first]}, (), "%s.%s" % (variable, second), defaults[first],
                                  id="%s-port-twice" % role))
    return cases


@pytest.mark.parametrize("role, patch, remove, named, value", _ray_port_cases())
def test_each_ray_port_mistake_is_found_before_the_ray_role_runs(role, patch, remove, named, value):
    """An inventory's ray_*_ports is merged over the role's default key by key: each key it names must be a
    known one, an integer port, used once."""
    fleet = valid_fleet()
    host = RAY_HOSTS[role]
    ports = _ray_ports(role)
    for key in remove:
        ports.pop(key)
    ports.update(patch)
    fleet[host]["%s_ports" % role] = ports
    finding = _only(preflight(fleet), host, named, value)
    if named.split(".")[1] not in _ray_ports(role) and value is not None:
        assert finding.fix == "rename it to '%s'" % [k for k in _ray_ports(role) if _misspell(k) == named.split(".")[1]][0]


@pytest.mark.parametrize("role", sorted(RAY_HOSTS))
def test_a_ray_port_map_may_name_only_the_ports_it_moves(role):
    """Merged key by key: one port named alone is no finding, and the plan's Ray ports move with it."""
    fleet = valid_fleet()
    host = RAY_HOSTS[role]
    key = sorted(k for k in _ray_ports(role) if k not in ("min_worker", "max_worker"))[0]
    fleet[host]["%s_ports" % role] = {key: 41000}
    assert preflight(fleet) == []
    from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan
    assert fleet_plan.ray_ports(role, fleet[host]) == dict(_ray_ports(role), **{key: 41000})


def test_an_executor_vllm_service_cannot_run_is_refused_before_anything_changes():
    """vllm_service_executor is read by the plan (as vllm_service reads it): a value that is neither mp nor ray
    is refused by its argument spec, naming the variable."""
    fleet = valid_fleet()
    fleet[HOST]["vllm_service_executor"] = "rya"
    assert [(f.host, f.variable) for f in preflight(fleet)] == [(HOST, "vllm_service_executor")]


def test_ray_ports_of_a_host_outside_any_ray_group_are_not_read():
    fleet = valid_fleet()
    fleet[HOST]["ray_head_ports"] = {"gcs": 6379}
    assert preflight(fleet) == []


# ------------------------------------------------------------------ more cross-host constraints
def ray_head_host_is_not_the_head(fleet):
    for host in ("spark-3", "spark-4", "spark-5", "spark-6"):
        fleet[host]["sparkfleet_ray_head_host"] = "spark-4"


def members_name_different_heads(fleet):
    fleet["spark-6"]["sparkfleet_ray_head_host"] = "spark-7"
    fleet["spark-7"]["group_names"] = ["sparks", "ray_head"]
    fleet["spark-7"]["sparkfleet_cluster"] = "solo"


def fabric_address_is_the_network(fleet):
    fleet["spark-8"]["sparkfleet_fabric_address"] = "192.168.100.0"


def fabric_address_is_the_broadcast(fleet):
    fleet["spark-8"]["sparkfleet_fabric_address"] = "192.168.100.255"


def fabric_address_not_text(fleet):
    fleet["spark-8"]["sparkfleet_fabric_address"] = 3232261138  # an address YAML read as a number


def port_given_as_a_list(fleet):
    corpus._both(fleet, ["spark-1", "spark-2"], port=[8000, 8001])


def master_port_given_as_a_mapping(fleet):
    corpus._both(fleet, ["spark-1", "spark-2"], master_port={"tcp": 29501})


MORE_CROSS_HOST = [
    (ray_head_host_is_not_the_head, {("spark-%d" % i, "sparkfleet_ray_head_host") for i in (3, 4, 5, 6)},
     "spark-4 is not in group ray_head"),
    # spark-6 also names the head of another cluster ('solo'): its own finding.
    (members_name_different_heads, {("spark-3, spark-4, spark-5, spark-6", "sparkfleet_ray_head_host"),
                                    ("spark-6", "sparkfleet_ray_head_host")},
     "the members of cluster 'ray-pp4' name different heads"),
    (fabric_address_is_the_network, {("spark-8", "sparkfleet_fabric_address")}, "network or broadcast"),
    (fabric_address_is_the_broadcast, {("spark-8", "sparkfleet_fabric_address")}, "network or broadcast"),
    (fabric_address_not_text, {("spark-8", "sparkfleet_fabric_address")}, "not an IPv4 address"),
    (port_given_as_a_list, {("spark-1", "sparkfleet_models[0] (qwen35-122b).port"),
                            ("spark-2", "sparkfleet_models[0] (qwen35-122b).port")}, "must be an integer"),
    (master_port_given_as_a_mapping, {("spark-1", "sparkfleet_models[0] (qwen35-122b).master_port"),
                                      ("spark-2", "sparkfleet_models[0] (qwen35-122b).master_port")},
     "must be an integer"),
]


@pytest.mark.parametrize("mistake, expected, words", MORE_CROSS_HOST, ids=[c[0].__name__ for c in MORE_CROSS_HOST])
def test_more_cross_host_constraints_violated_once(mistake, expected, words):
    fleet = valid_fleet()
    mistake(fleet)
    findings = preflight(fleet)
    lines = [str(f) for f in findings]
    for finding in findings:
        assert_well_formed(finding)
    assert set((f.host, f.variable) for f in findings) == expected, lines
    assert len(findings) == len(expected), lines
    assert any(words in line for line in lines), lines


# ------------------------------------------------------------------ many kinds of mistakes, several hosts, one run
def test_many_kinds_of_mistakes_on_several_hosts_are_reported_in_one_go():
    fleet = valid_fleet()
    secret_key, secret_token = "sk-live-do-not-print", "hf_live_do_not_print"
    corpus._model(fleet, "spark-7").update(source=dict(GOOD_SOURCE["hf"], revison="main"), port=[8000],
                                           speculative={"method": "mtp", "num_speculative_tokens": "2"})
    corpus._model(fleet, "spark-8", 1)["api_key"] = secret_key
    fleet["spark-8"]["vllm_service_api_key"] = [secret_key]
    fleet["spark-8"]["model_store_hf_tokne"] = secret_token
    fleet["spark-3"]["ray_head_ports"] = dict(_ray_ports("ray_head"), gcs="6379/tcp")
    fleet["spark-5"]["sparkfleet_service_user"] = True
    fleet["spark-1"]["qsfp_network_renderer"] = "netplan"
    findings = preflight(fleet)
    text = "\n".join(str(f) for f in findings) + repr([f.as_dict() for f in findings])
    assert secret_key not in text and secret_token not in text
    for finding in findings:
        assert_well_formed(finding)
    assert sorted((f.host, f.variable.replace(ENTRY, "E")) for f in findings) == sorted([
        ("spark-1", "qsfp_network_renderer"),
        ("spark-3", "ray_head_ports.gcs"),
        ("spark-5", "sparkfleet_service_user"),
        ("spark-7", "E.port"),
        ("spark-7", "E.source.revison"),
        ("spark-7", "E.speculative.num_speculative_tokens"),
        ("spark-8", "model_store_hf_tokne"),
        ("spark-8", "sparkfleet_models[1] (nemotron-9b).api_key"),
        ("spark-8", "vllm_service_api_key"),
    ]), text
