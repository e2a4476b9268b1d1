# -*- coding: utf-8 -*-
"""The contract checker against small made-up releases: known-bad flags and variables are
rejected with the flag, the release and the origin named (runs without the cache)."""

import os
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "contract"))
sys.path.insert(0, os.path.join(TOP, "tools"))

import checker  # noqa: E402
import nccl_params  # noqa: E402

RELEASES = {
    "vllm": ("vLLM 9.9 (vllm/envs.py)", {"VLLM_HOST_IP", "VLLM_MARLIN_USE_ATOMIC_ADD"}),
    "ray": ("Ray 9.9", {"RAY_AUTH_MODE"}),
    "nccl": ("NCCL v9", {"NCCL_IB_HCA"}),
}


def env(name, origin="roles/x/templates/y.j2"):
    return {"name": name, "value": "1", "origin": origin}


def test_known_variables_pass():
    items = [env("VLLM_HOST_IP"), env("RAY_AUTH_MODE"), env("NCCL_IB_HCA"), env("HOME")]
    assert checker.check_env(items, RELEASES) == []


@pytest.mark.parametrize("name,release", [("VLLM_USE_V1", "vLLM 9.9"), ("RAY_NO_SUCH", "Ray 9.9"),
                                          ("NCCL_IB_HCAS", "NCCL v9")])
def test_unknown_variable_is_rejected_naming_release_and_origin(name, release):
    messages = checker.check_env([env(name, "inventories/two-spark, host spark-1, unit u")], RELEASES,
                                 where_set=lambda n: ["rule some_rule"])
    assert len(messages) == 1
    assert messages[0].startswith(name + ": " + release)
    assert "inventories/two-spark, host spark-1, unit u" in messages[0]
    assert "rule some_rule" in messages[0]


def test_same_variable_from_many_places_is_one_message():
    items = [env("VLLM_USE_V1", "a"), env("VLLM_USE_V1", "b"), env("VLLM_USE_V1", "c"), env("VLLM_USE_V1", "d")]
    (message,) = checker.check_env(items, RELEASES)
    assert "a; b; c; and 1 more" in message


def test_unchecked_families_are_listed_not_failed():
    items = [env("GLOO_SOCKET_IFNAME"), env("UCX_NET_DEVICES"), env("VLLM_HOST_IP")]
    assert checker.check_env(items, RELEASES) == []
    assert checker.unchecked(items) == ["GLOO_SOCKET_IFNAME", "UCX_NET_DEVICES"]


def test_refused_argv_names_flag_release_and_origin():
    items = [{"argv": ["vllm", "serve", "m", "--moe-backend", "cutlas"], "origin": "seed configuration 's'"},
             {"argv": ["vllm", "serve", "m"], "origin": "fine"}]
    verdicts = [{"ok": False, "error": "argument --moe-backend: invalid choice: 'cutlas'"}, {"ok": True}]
    (message,) = checker.check_argvs(items, verdicts, "vLLM 9.9", flag_origin=lambda f: "rule moe_backend")
    assert message.startswith("vLLM 9.9 refuses --moe-backend (set by rule moe_backend)")
    assert "seed configuration 's'" in message and "--moe-backend cutlas" in message


def test_unrecognized_flag_is_named():
    verdicts = [{"ok": False, "error": "unrecognized arguments: --no-such-flag"}]
    (message,) = checker.check_argvs([{"argv": ["vllm", "serve", "m", "--no-such-flag"], "origin": "o"}],
                                     verdicts, "vLLM 9.9")
    assert "refuses --no-such-flag" in message


def test_argvs_and_verdicts_must_line_up():
    with pytest.raises(ValueError):
        checker.check_argvs([{"argv": [], "origin": "o"}], [], "vLLM 9.9")


def test_nccl_list_of_another_tag_is_refused_with_the_command():
    problem = checker.nccl_list_problem("v2.27.0-1", "v2.28.9-1", "python3 tools/nccl_params.py --tag v2.28.9-1")
    assert "v2.27.0-1" in problem and "python3 tools/nccl_params.py --tag v2.28.9-1" in problem
    assert checker.nccl_list_problem("v2.28.9-1", "v2.28.9-1", "x") is None


def test_nccl_list_parses_header_and_names():
    tag, commit, names = checker.parse_nccl_list("# tag: v1\n# commit: abc\nNCCL_A\tparam x:1\nNCCL_B\tgetenv y:2\n")
    assert (tag, commit, names) == ("v1", "abc", {"NCCL_A", "NCCL_B"})


def test_nccl_extractor_finds_every_kind_of_read():
    files = {
        "src/a.cc": 'NCCL_PARAM(IbGidIndex, "IB_GID_INDEX", -1);\n'
                    'const char* e = ncclGetEnv("NCCL_IB_HCA");\n'
                    'const char* d = getenv("NCCL_DEBUG");\n'
                    'ncclGetLevel(&l, "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL");\n'
                    'INFO(NCCL_ENV, "NCCL_SOCKET_IFNAME set to %s", env);\n',
        "src/include/param.h": '#define NCCL_PARAM(name, env, deftVal) \\\n  ncclLoadParam("NCCL_" env, deftVal);\n',
    }
    found, macros = nccl_params.extract(files)
    assert set(found) == {"NCCL_IB_GID_INDEX", "NCCL_IB_HCA", "NCCL_DEBUG", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL"}
    assert found["NCCL_IB_GID_INDEX"][0].startswith("param src/a.cc:1")
    assert macros == ["NCCL_PARAM"]


def test_nccl_extractor_reports_a_new_declaring_macro():
    files = {"src/include/x.h": '#define NCCL_OTHER_PARAM(name, env) \\\n  load("NCCL_" env);\n'}
    _found, macros = nccl_params.extract(files)
    assert "NCCL_OTHER_PARAM" in macros


def test_a_variable_set_for_someone_else_is_not_failed_but_others_are():
    items = [env("NCCL_HOME"), env("NCCL_NO_SUCH")]
    (message,) = checker.check_env(items, RELEASES, not_for_the_release={"NCCL_HOME": "for nccl-tests"})
    assert message.startswith("NCCL_NO_SUCH")
