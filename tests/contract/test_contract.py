# -*- coding: utf-8 -*-
"""Contract tests: what the collection renders, checked by the pinned upstream releases.

The rule book pins vLLM (vllm_version), Ray (ray_version) and NCCL (nccl_git_tag).
`make setup` fetched the first two, checked by sha256 (tools/contract.lock), into a
venv of the cache (tools/contract_setup.py); NCCL's parameter list is committed
(tools/nccl_params.py). Here:

* every `vllm serve` argv (example inventories rendered by the roles, the seeds'
  configurations, generated model entries) goes through vLLM's real `serve`
  parser, and every JSON option through the fields of its config class;
* every `ray start` argv of the Ray units through Ray's click command;
* every VLLM_*, RAY_*, NCCL_* variable the units and env files set against
  vllm/envs.py, Ray's sources and _raylet.so, and NCCL's list.

Nothing here is skipped: without the cache the tests fail and say `make setup`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import checker  # noqa: E402
import collect  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils import benchmark  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils import vllm_release  # noqa: E402

CACHE = os.environ.get("SPARKFLEET_CACHE") or "/var/cache/sparkfleet"
VENV_PYTHON = os.path.join(CACHE, "contract-venv", "bin", "python")
VLLM = "vLLM %s" % rulebook.setting("vllm_version")
RAY = "Ray %s" % rulebook.setting("ray_version")
NCCL_TAG = rulebook.setting("nccl_git_tag")
NCCL_LIST = os.path.join(HERE, "nccl_params-%s.txt" % NCCL_TAG)
NCCL_REGEN = "python3 tools/nccl_params.py --tag %s   (from a clone or mirror of NVIDIA/nccl: --git-dir DIR)" % NCCL_TAG

# Argvs the real parsers must refuse: proof that a wrong flag fails here.
KNOWN_BAD_VLLM = [
    ["vllm", "serve", "m", "--no-such-flag-in-any-release"],
    ["vllm", "serve", "m", "--kv-cache-dtype", "no_such_dtype"],
    ["vllm", "serve", "m", "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 2, "no_such_key": 1}'],
    ["vllm", "serve", "m", "--speculative-config", '{"method": "no_such_method", "num_speculative_tokens": 2}'],
    ["vllm", "serve", "m", "--compilation-config", '{"no_such_key": 1}'],
    ["vllm", "serve", "m", "--kv-transfer-config", '{"kv_connector": "NixlConnector", "kv_role": "kv_both", "no_such_key": 1}'],
    ["vllm", "serve", "m", "--attention-backend", "NO_SUCH_BACKEND"],
    ["vllm", "serve", "m", "--enable-auto-tool-choice", "--tool-call-parser", "no_such_parser"],
    ["vllm", "serve", "m", "--enable-auto-tool-choice"],
    # One item holding a flag and its value: the parser reads the whole string as a flag name
    # (model_entry's extra_args check refuses it for that reason).
    ["vllm", "serve", "m", "--max-num-seqs 8"],
]
# Argvs the real parser must accept: underscores in a flag name are dashes to it, so the extra_args
# check reads '--enforce_eager' as '--enforce-eager' (plugins/module_utils/vllm_args.py _flag_name).
KNOWN_SPELLINGS_VLLM = [
    ["vllm", "serve", "m", "--max_num_seqs", "8", "--enforce_eager"],
    ["vllm", "serve", "m", "--max_num_seqs=8", "--speculative_config.method=mtp",
     "--speculative_config.num_speculative_tokens=2"],
]
# What role_settings refuses in the ray role's settings because Ray's click command does (ray_args.extra_args_problems,
# _click_int): an option and its value as one item, an underscore where click wants a dash, a size for an INT option.
KNOWN_BAD_RAY = [["ray", "start", "--head", "--no-such-flag-in-any-release=1"],
                 ["ray", "start", "--head", "--plasma-directory /dev/shm"],
                 ["ray", "start", "--head", "--plasma_directory=/dev/shm"],
                 ["ray", "start", "--head", "--object-store-memory=10GB"],
                 ["ray", "start", "--head", "--num-cpus=4.5"]]
# What `vllm bench serve` must refuse: proof that a wrong benchmark flag fails here.
KNOWN_BAD_BENCH = [["vllm", "bench", "serve", "--no-such-flag-in-any-release"],
                   ["vllm", "bench", "serve", "--backend", "no-such-backend"],
                   ["vllm", "bench", "serve", "--max-concurrency", "four"]]


def bench_argvs():
    """The benchmark's argvs (role fleet_benchmark's defaults, every concurrency of its sweep) for an entry served
    from the model store, and one with trust_remote_code."""
    with open(os.path.join(TOP, "roles", "fleet_benchmark", "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    settings = {key: defaults["fleet_benchmark_" + key] for key in ("input_len", "output_len", "rounds", "min_prompts",
                                                                    "seed")}
    out = []
    for trust in (False, True):
        endpoint = {"name": "qwen3", "call_address": "127.0.0.1", "port": 8000, "served_name": "qwen3-235b",
                    "tokenizer": "/var/lib/sparkfleet/models/qwen3", "trust_remote_code": trust}
        for concurrency in defaults["fleet_benchmark_concurrency"]:
            out.append({"argv": benchmark.bench_argv("/opt/sparkfleet/venv/bin/vllm", endpoint, concurrency, settings,
                                                     "/var/lib/sparkfleet/benchmark"),
                        "concurrency": concurrency, "settings": settings})
    return out


# Variables of a checked family that the collection sets for someone other than the
# release, each with the reason; the test prints them. Keep this short.
NOT_FOR_THE_RELEASE = {
    "NCCL_HOME": "the NCCL install prefix in roles/nccl/templates/nccl.env.j2, for nccl-tests' build "
                 "(roles/nccl/tasks/tests_build.yml) and for people; verify requires the line. libnccl never reads it.",
}


def _nccl_names():
    if not os.path.exists(NCCL_LIST):
        pytest.fail("no NCCL parameter list for the rule book's nccl_git_tag %s (%s); make it with\n    %s"
                    % (NCCL_TAG, os.path.relpath(NCCL_LIST, TOP), NCCL_REGEN))
    with open(NCCL_LIST) as handle:
        tag, _commit, names = checker.parse_nccl_list(handle.read())
    problem = checker.nccl_list_problem(tag, NCCL_TAG, NCCL_REGEN)
    if problem:
        pytest.fail(problem)
    return names


def _flag(argv, flag):
    return argv[argv.index(flag) + 1] if flag in argv else None


def moe_checks(groups):
    """(weight kind, --moe-backend) of every rendered argv that sets a MoE backend: the kind is the
    MoE oracle the argv's --quantization takes (rule moe_backend's moe_kernel_by_loader); loaders
    with their own Marlin MoE method (gptq_marlin, awq_marlin) never read the flag."""
    kinds = rulebook.setting("moe_kernel_by_loader")
    for group in groups:
        for item in group:
            backend = _flag(item["argv"], "--moe-backend")
            kind = kinds.get(_flag(item["argv"], "--quantization") or "none")
            if backend and kind:
                yield kind, backend


@pytest.fixture(scope="session")
def contract():
    """Everything collected and the releases' answer, computed once."""
    _nccl_names()  # refuse to run against an NCCL list of another tag
    check = subprocess.run([sys.executable, os.path.join(TOP, "tools", "contract_setup.py"), "--check"],
                           capture_output=True, text=True, check=False)
    if check.returncode != 0:
        pytest.fail("the pinned releases are not in the cache: %s" % (check.stdout + check.stderr).strip())
    # The probe imports vLLM and Ray (seconds) while the inventories render.
    probe = subprocess.Popen([VENV_PYTHON, os.path.join(HERE, "upstream_probe.py")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        rendered = collect.render_all()
    except Exception:
        probe.kill()
        probe.communicate()
        raise
    items = collect.collect(rendered)
    seeds = collect.seed_argvs()
    generated, refused = collect.generated_argvs()
    groups = {"inventories": items["vllm"], "seeds": seeds, "generated": generated, "known-bad": [
        {"argv": a, "origin": "known-bad"} for a in KNOWN_BAD_VLLM], "spellings": [
        {"argv": a, "origin": "spellings"} for a in KNOWN_SPELLINGS_VLLM]}
    vllm_argvs = [i["argv"] for g in groups.values() for i in g]
    bench = bench_argvs()
    request = {"vllm_argvs": vllm_argvs, "ray_argvs": [i["argv"] for i in items["ray"]] + KNOWN_BAD_RAY,
               "bench_argvs": [b["argv"] for b in bench] + KNOWN_BAD_BENCH,
               "moe_checks": sorted(set(moe_checks([groups[n] for n in ("inventories", "seeds", "generated")]))),
               "mtp_targets": list(vllm_release.MTP_TARGET_MODEL_TYPES)}
    out, err = probe.communicate(json.dumps(request))
    if probe.returncode != 0:
        pytest.fail("the upstream probe failed in %s:\n%s" % (VENV_PYTHON, err[-4000:]))
    answer = json.loads(out)
    verdicts, start = {}, 0
    for name, group in groups.items():
        verdicts[name] = answer["vllm"][start:start + len(group)]
        start += len(group)
    n_ray = len(items["ray"])
    return {"rendered": rendered, "items": items, "groups": groups, "verdicts": verdicts, "answer": answer,
            "ray_verdicts": answer["ray"][:n_ray], "ray_bad_verdicts": answer["ray"][n_ray:],
            "refused": refused, "env": items["env"] + collect.rulebook_env(),
            "bench": bench, "bench_verdicts": answer["bench"][:len(bench)],
            "bench_bad_verdicts": answer["bench"][len(bench):]}


def _report(messages, what):
    if messages:
        pytest.fail("%d %s:\n%s" % (len(messages), what, "\n".join(messages)), pytrace=False)


def test_releases_are_the_rule_books(contract):
    assert contract["answer"]["vllm_version"] == rulebook.setting("vllm_version")
    assert contract["answer"]["ray_version"] == rulebook.setting("ray_version")


def test_rendering_is_the_recorded_one(contract):
    """What every example inventory renders (vLLM, head watch and Ray units, env files, the NCCL env, verify's
    endpoints and Ray cluster, the health probe's config) is what tests/contract/rendered/ records: a refactor
    changes none of it, and a deliberate change re-records it (`make render-record`) in the same commit."""
    changed = []
    for name, hosts in sorted(contract["rendered"].items()):
        path = os.path.join(collect.RECORDED, name + ".json")
        if not os.path.exists(path):
            changed.append("inventories/%s: nothing recorded in %s" % (name, path))
            continue
        with open(path) as handle:
            recorded = json.loads(handle.read())
        now = json.loads(collect.portable(hosts))
        for host in sorted(set(recorded) | set(now)):
            for key in sorted(set(recorded.get(host) or {}) | set(now.get(host) or {})):
                if (recorded.get(host) or {}).get(key) != (now.get(host) or {}).get(key):
                    changed.append("inventories/%s, %s: %s differs from the recording" % (name, host, key))
    _report(changed, "renderings differ from tests/contract/rendered/ (a deliberate change: make render-record)")


def test_every_example_inventory_was_rendered(contract):
    assert sorted(contract["rendered"]) == collect.EXAMPLES
    for inv, hosts in contract["rendered"].items():
        assert hosts, "inventories/%s rendered no host" % inv
    assert contract["groups"]["inventories"], "no vLLM unit rendered from any inventory"
    assert contract["items"]["ray"], "no Ray unit rendered from any inventory"


@pytest.mark.parametrize("group", ["inventories", "seeds", "generated"])
def test_vllm_serve_accepts_every_argv(contract, group):
    items, verdicts = contract["groups"][group], contract["verdicts"][group]
    assert items, "nothing collected for %s" % group
    _report(checker.check_argvs(items, verdicts, VLLM, collect.flag_origin),
            "vllm serve argv(s) of the %s the pinned vLLM refuses" % group)


def test_generated_entries_cover_the_schema(contract):
    """The generator renders hundreds of entries; a schema change that breaks it shows here."""
    assert len(contract["groups"]["generated"]) > 200, contract["refused"]


def test_json_options_checked_against_their_config_class(contract):
    checked = {c["flag"]: c["class"] for v in contract["verdicts"]["inventories"] + contract["verdicts"]["seeds"]
               for c in v.get("json", [])}
    assert checked.get("--speculative-config", "").endswith(".SpeculativeConfig"), checked


def test_the_real_vllm_parser_refuses_known_bad_argvs(contract):
    for argv, verdict in zip(KNOWN_BAD_VLLM, contract["verdicts"]["known-bad"]):
        assert not verdict["ok"], "%s accepted %s" % (VLLM, argv)


def test_the_real_vllm_parser_reads_underscores_as_dashes(contract):
    for argv, verdict in zip(KNOWN_SPELLINGS_VLLM, contract["verdicts"]["spellings"]):
        assert verdict["ok"], "%s refused %s: %s" % (VLLM, argv, verdict["error"])


def test_ray_start_accepts_every_unit_argv(contract):
    _report(checker.check_argvs(contract["items"]["ray"], contract["ray_verdicts"], RAY),
            "ray start argv(s) the pinned Ray refuses")


def test_the_real_ray_command_refuses_a_known_bad_flag(contract):
    assert contract["ray_bad_verdicts"] and not any(v["ok"] for v in contract["ray_bad_verdicts"])


def test_every_option_the_collection_manages_is_a_ray_start_option(contract):
    """ray_extra_args may not repeat what ray_args sets (role_settings refuses it by these names): each of them is an
    option of the pinned Ray's ray start, so none of the names is stale."""
    from ansible_collections.sparkfleet.gb10.plugins.module_utils import ray_args
    missing = sorted(set(ray_args.MANAGED_FLAGS) - set(contract["answer"]["ray_start_options"]))
    assert not missing, "%s has no option %s (plugins/module_utils/ray_args.py MANAGED_FLAGS)" % (RAY, missing)


def test_every_variable_is_read_by_its_release(contract):
    answer = contract["answer"]
    known = {"vllm": ("%s (vllm/envs.py)" % VLLM, set(answer["vllm_env"])),
             "ray": ("%s (its Python sources and _raylet.so)" % RAY,
                     set(answer["ray_env_python"]) | set(answer["ray_env_raylet"])),
             "nccl": ("NCCL %s (%s)" % (NCCL_TAG, os.path.relpath(NCCL_LIST, TOP)), _nccl_names())}
    families = {checker.family(i["name"]) for i in contract["env"]}
    assert {"vllm", "ray", "nccl"} <= families, families
    print("not checked (no pinned source here): %s" % ", ".join(checker.unchecked(contract["env"])))
    for name, reason in sorted(NOT_FOR_THE_RELEASE.items()):
        print("set for someone else: %s: %s" % (name, reason))
    _report(checker.check_env(contract["env"], known, collect.where_set, NOT_FOR_THE_RELEASE),
            "variable(s) the collection sets that the pinned release never reads")


def test_nccl_list_is_of_the_rule_books_tag():
    names = _nccl_names()
    for name in ("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_NET_PLUGIN", "NCCL_DEBUG", "NCCL_IB_GID_INDEX"):
        assert name in names, "%s missing from %s: the extractor lost a kind of read" % (name, NCCL_LIST)


# Rule book settings that name vLLM values, and where vLLM lists them. A rule that
# forbids a name the release does not know guards nothing; one that picks it breaks.
VOCABULARY = {
    "vllm_moe_backend": "--moe-backend",
    "vllm_forbidden_moe_backends": "--moe-backend",
    "vllm_attention_backend": "--attention-backend",
    "vllm_forbidden_attention_backends": "--attention-backend",
    "kv_cache_dtype_default": "--kv-cache-dtype",
    "kv_cache_dtype_allowed": "--kv-cache-dtype",
    "speculative_method": "--speculative-config method",
    "speculative_forbidden_methods": "--speculative-config method",
}


def test_the_rule_books_vllm_names_are_the_releases(contract):
    vocabulary = contract["answer"]["vllm_vocabulary"]
    messages = []
    for key, where in sorted(VOCABULARY.items()):
        values = rulebook.setting(key)
        for value in values if isinstance(values, list) else [values]:
            if value not in vocabulary[where]:
                messages.append("%s: %r (rule %s, setting %s) is not a value of %s %s (it has: %s)" % (
                    where, value, rulebook.SETTING_OWNER[key], key, VLLM, where, ", ".join(vocabulary[where])))
    _report(messages, "rule book value(s) the pinned vLLM does not know")


def test_every_moe_backend_is_one_its_weights_take(contract):
    """Past parsing: the MoE backend each argv renders, through the release's own mapping for the
    argv's weight kind (what raises ValueError at model build, after the parser accepted it)."""
    verdicts = contract["answer"]["moe"]
    assert {v["kind"] for v in verdicts} >= {"unquantized", "nvfp4", "mxfp4"}, verdicts
    _report(["--moe-backend %s for %s weights: %s" % (v["backend"], v["kind"], v["error"])
             for v in verdicts if not v["ok"]], "MoE backend(s) the pinned vLLM refuses at model build")


def test_the_release_refuses_marlin_for_bf16_experts(contract):
    """The check above can fail: the probe is asked what the release does with marlin for unquantized experts."""
    probe = subprocess.run([VENV_PYTHON, os.path.join(HERE, "upstream_probe.py"), "--release"], input=json.dumps(
        {"moe_checks": [["unquantized", "marlin"], ["nvfp4", "marlin"]]}), capture_output=True, text=True, check=False)
    assert probe.returncode == 0, probe.stderr[-2000:]
    verdicts = json.loads(probe.stdout)["moe"]
    assert [v["ok"] for v in verdicts] == [False, True], verdicts
    assert "not supported for unquantized MoE" in verdicts[0]["error"]


def test_release_facts_file_is_the_pinned_releases():
    """plugins/module_utils/vllm_release.py is what tools/vllm_release_facts.py reads from the pinned wheel now."""
    check = subprocess.run([sys.executable, os.path.join(TOP, "tools", "vllm_release_facts.py"), "--check"],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert vllm_release.VLLM_VERSION == rulebook.setting("vllm_version")
    assert vllm_release.TRANSFORMERS_VERSION == rulebook.setting("transformers_version")


def test_release_facts_agree_with_the_release_at_run_time(contract):
    """The facts read from the files without importing them are what the imported release says."""
    real = contract["answer"]["release_facts"]
    missing = sorted(set(vllm_release.GENERATIVE_ARCHITECTURES) - set(real["supported_archs"]))
    assert not missing, "registry architectures the release does not list: %s" % missing
    assert list(vllm_release.VLLM_CONFIG_MODEL_TYPES) == real["vllm_config_model_types"]
    assert list(vllm_release.TRANSFORMERS_MODEL_TYPES) == real["transformers_model_types"]
    wrong = dict((t, c) for t, c in real["mtp_converted"].items()
                 if c not in vllm_release.MTP_MODEL_TYPES and not str(c).endswith("_mtp"))
    assert not wrong, "MTP targets hf_config_override does not turn into an MTP drafter: %s" % wrong


def test_vllm_bench_serve_accepts_the_benchmarks_argv(contract):
    """Every run of the benchmark's sweep parses with the pinned release's `vllm bench serve`, and reads as meant."""
    for item, verdict in zip(contract["bench"], contract["bench_verdicts"]):
        assert verdict["ok"], "%s refuses %s: %s" % (VLLM, " ".join(item["argv"]), verdict["error"])
        values, settings = verdict["values"], item["settings"]
        assert values["max_concurrency"] == item["concurrency"]
        assert values["num_prompts"] == benchmark.num_prompts(item["concurrency"], settings["rounds"],
                                                              settings["min_prompts"])
        assert (values["dataset_name"], values["random_input_len"], values["random_output_len"]) == (
            "random", settings["input_len"], settings["output_len"])
        assert values["ignore_eos"] is True and values["save_result"] is True and values["temperature"] == 0
        assert values["result_filename"] == benchmark.result_filename("qwen3", item["concurrency"])
        assert values["endpoint"] == "/v1/completions" and values["base_url"] == "http://127.0.0.1:8000"
        assert set(values["percentile_metrics"].split(",")) == set(benchmark.LATENCIES)


def test_the_real_bench_parser_refuses_known_bad_argvs(contract):
    assert [v["ok"] for v in contract["bench_bad_verdicts"]] == [False] * len(KNOWN_BAD_BENCH)


def test_the_benchmark_hands_the_key_where_the_release_reads_it(contract):
    """The role passes the endpoint's key in the one variable the release's request functions read."""
    assert contract["answer"]["bench_key_variables"] == [benchmark.KEY_VARIABLE]
    with open(os.path.join(TOP, "roles", "fleet_benchmark", "tasks", "main.yml")) as handle:
        tasks = yaml.safe_load(handle)
    run = [t for t in tasks if "sparkfleet.gb10.vllm_bench" in t]
    # The key goes through the module's no_log option into the run's environment (vllm_bench sets KEY_VARIABLE),
    # never through the task keyword `environment`, which puts it on the command line Ansible runs.
    assert len(run) == 1 and "api_key" in run[0]["sparkfleet.gb10.vllm_bench"] and "environment" not in run[0]
