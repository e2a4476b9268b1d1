# -*- coding: utf-8 -*-
"""vllm_env_check: an environment override must not bring back what the kernel rules turned off."""
import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.vllm_args import FilterModule, vllm_env_check
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook


def test_registered():
    assert FilterModule().filters()["vllm_env_check"] is vllm_env_check


def test_the_rule_book_environment_and_harmless_overrides_pass():
    env = dict(rulebook.kernel_env(), VLLM_TARGET_DEVICE="cpu", TRITON_PTXAS_PATH="/usr/local/cuda-13.0/bin/ptxas")
    assert vllm_env_check(env) == env
    assert rulebook.env_violations({}) == []


@pytest.mark.parametrize("env,rule_id", [
    ({"VLLM_ATTENTION_BACKEND": "FLASHINFER"}, "attention_backend"),
    ({"VLLM_ATTENTION_BACKEND": "flashinfer"}, "attention_backend"),
    ({"VLLM_MOE_BACKEND": "flashinfer_cutlass"}, "moe_backend"),
    ({"VLLM_USE_FLASHINFER_MOE_FP4": "1"}, "flashinfer_moe_fp4_off"),
    ({"VLLM_MARLIN_USE_ATOMIC_ADD": "0"}, "marlin_atomic_add"),
    ({"VLLM_FLASHINFER_MOE_BACKEND": "latency"}, "flashinfer_moe_fp4_off"),  # what 002 set
    ({"VLLM_USE_V1": "1"}, "flashinfer_moe_fp4_off"),
    ({"VLLM_DISABLED_KERNELS": "MarlinLinearKernel"}, "cutlass_fp8_disabled_kernels"),
    ({"VLLM_DISABLED_KERNELS": ""}, "cutlass_fp8_disabled_kernels"),
    # vLLM reads " FlashInferFP8ScaledMMLinearKernel" as a name of its own: the space undoes it.
    ({"VLLM_DISABLED_KERNELS": "CutlassFP8ScaledMMLinearKernel, FlashInferFP8ScaledMMLinearKernel,"
                               "CutlassInt8ScaledMMLinearKernel"}, "cutlass_fp8_disabled_kernels"),
])
def test_each_forbidden_override_names_its_rule(env, rule_id):
    found = rulebook.env_violations(env)
    assert [f[2] for f in found] == [rule_id]
    with pytest.raises(AnsibleFilterError) as err:
        vllm_env_check(env, host="spark-2")
    name, value = next(iter(env.items()))
    for word in ("spark-2", "vllm_service_environment", "%s=%s" % (name, value), rule_id):
        assert word in str(err.value)


def test_all_problems_are_reported_together():
    env = {"VLLM_ATTENTION_BACKEND": "FLASHINFER", "VLLM_USE_FLASHINFER_MOE_FP4": "1"}
    assert {f[2] for f in rulebook.env_violations(env)} == {"attention_backend", "flashinfer_moe_fp4_off"}


def test_more_disabled_kernels_pass():
    env = {"VLLM_DISABLED_KERNELS": "MarlinLinearKernel," + rulebook.kernel_env()["VLLM_DISABLED_KERNELS"]}
    assert rulebook.env_violations(env) == []


def test_the_allowed_backend_passes():
    assert rulebook.env_violations({"VLLM_ATTENTION_BACKEND": rulebook.setting("vllm_attention_backend")}) == []


def test_bad_input():
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        vllm_env_check(["VLLM_USE_V1=1"])
