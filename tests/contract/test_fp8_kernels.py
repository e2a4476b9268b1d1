# -*- coding: utf-8 -*-
"""The pinned vLLM's own FP8/INT8 linear-kernel selection, on a capability-12.1 CUDA platform, with the environment
the collection renders for a Spark's units (rules cutlass_fp8_disabled_kernels and cutlass_fp8_patch).

The pinned vLLM chooses FP8, block-FP8 and INT8 linear kernels in vllm/model_executor/kernels/linear/__init__.py
(choose_scaled_mm_linear_kernel over _POSSIBLE_FP8_KERNELS, _POSSIBLE_FP8_BLOCK_KERNELS, _POSSIBLE_INT8_KERNELS). That selection never reads
cutlass_fp8_supported() or CUTLASS_FP8_SUPPORTED, which vllm_sm121_patch edits: proving the patch applies does not
prove a Spark avoids the prebuilt CUTLASS GEMM (seed 004: 'Error Internal' on sm_121). The switch it does read is
VLLM_DISABLED_KERNELS (kernel.__name__ in envs.VLLM_DISABLED_KERNELS).

Here the release's selection runs in the contract venv (vLLM of the rule book's version) with:
* the VLLM_* environment of every vLLM unit and Ray environment file the example inventories render
  (tests/contract/rendered/, which test_contract.py holds to what the roles render now);
* vLLM's own Platform interface saying CUDA, capability 12.1 (no CUDA kernels are loaded; the two capability
  queries of vllm._custom_ops that w8a8_utils asks at import answer as the release's binary does at 12.1: True);
* FlashInfer present and absent (the pinned vLLM requires flashinfer-python, so a Spark has it; the venv has not).
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import collect  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook  # noqa: E402

CACHE = os.environ.get("SPARKFLEET_CACHE") or "/var/cache/sparkfleet"
VENV_PYTHON = os.path.join(CACHE, "contract-venv", "bin", "python")
VLLM = "vLLM %s" % rulebook.setting("vllm_version")
NAME = "VLLM_DISABLED_KERNELS"

ASK = r'''
import json, os, sys
sys.path.insert(0, os.environ["SPARKFLEET_CONTRACT_DIR"])
import upstream_probe  # the contract's one CUDA platform stand-in, here at GB10's compute capability
from vllm.platforms.interface import PlatformEnum

upstream_probe._use_cuda_stand_in(tuple(int(p) for p in os.environ["SPARKFLEET_CAPABILITY"].split(".")))
import vllm._custom_ops as ops
# w8a8_utils asks these at import (its module constants); the release's binary answers True at 12.1.
ops.cutlass_scaled_mm_supports_fp8 = lambda capability: True
ops.cutlass_scaled_mm_supports_block_fp8 = lambda capability: True
import torch
import vllm.envs as envs
from vllm.model_executor.kernels import linear
from vllm.model_executor.kernels.linear.scaled_mm import flashinfer as flashinfer_kernel
from vllm.model_executor.kernels.linear.scaled_mm.pytorch import TorchFP8ScaledMMLinearKernel
from vllm.model_executor.kernels.linear.scaled_mm.triton import TritonInt8ScaledMMLinearKernel
from vllm.model_executor.layers.quantization.utils import quant_utils

ACTIVATIONS = ("kFp8StaticTensorSym", "kFp8DynamicTensorSym", "kFp8DynamicTokenSym")
WEIGHTS = ("kFp8StaticTensorSym", "kFp8StaticChannelSym", "kFp8Static128BlockSym")


def choose(config, possible):
    try:
        kernel = linear.choose_scaled_mm_linear_kernel(config, possible)
    except ValueError:
        return None
    return kernel


def name(kernel):
    return None if kernel is None else kernel.__name__


BLOCK = getattr(linear, "_POSSIBLE_FP8_BLOCK_KERNELS", {})  # its own list from 0.20 on
FIELDS = set(getattr(linear.FP8ScaledMMLinearLayerConfig, "__dataclass_fields__", {}))
# The layer's shape and input type, asked from 0.23 on: a 4096x4096 BF16 layer, as a Spark's models have.
SHAPE = dict((k, v) for k, v in (("weight_shape", (4096, 4096)), ("input_dtype", torch.bfloat16)) if k in FIELDS)
out = {"cuda_kernels": sorted({k.__name__ for lists in (linear._POSSIBLE_FP8_KERNELS, linear._POSSIBLE_INT8_KERNELS,
                                                         linear._POSSIBLE_KERNELS, BLOCK)
                               for k in lists.get(PlatformEnum.CUDA, [])}),
       "envs": []}
for env in json.loads(sys.stdin.read()):
    for key in [k for k in os.environ if k.startswith("VLLM_") and k != "VLLM_LOGGING_LEVEL"]:
        del os.environ[key]
    os.environ.update(env)
    seen = {"disabled": list(envs.VLLM_DISABLED_KERNELS), "fp8": [], "int8": []}
    for flashinfer in (True, False):
        flashinfer_kernel.has_flashinfer = lambda: flashinfer
        for act in ACTIVATIONS:
            for weight in WEIGHTS:
                config = linear.FP8ScaledMMLinearLayerConfig(weight_quant_key=getattr(quant_utils, weight),
                                                            activation_quant_key=getattr(quant_utils, act),
                                                            out_dtype=torch.bfloat16, **SHAPE)
                block = weight.endswith("BlockSym") and BLOCK
                kernel = choose(config, BLOCK if block else linear._POSSIBLE_FP8_KERNELS)
                seen["fp8"].append({"activation": act, "weight": weight, "flashinfer": flashinfer,
                                    "kernel": name(kernel),
                                    "torch_scaled_mm": kernel is not None
                                    and issubclass(kernel, TorchFP8ScaledMMLinearKernel)})
    for channelwise in (False, True):
        for static in (False, True):
            for symmetric in (True, False):
                config = linear.Int8ScaledMMLinearLayerConfig(is_static_input_scheme=static,
                                                             is_channelwise=channelwise, input_symmetric=symmetric)
                kernel = choose(config, linear._POSSIBLE_INT8_KERNELS)
                seen["int8"].append({"channelwise": channelwise, "static": static, "symmetric": symmetric,
                                     "kernel": name(kernel),
                                     "triton": kernel is not None and issubclass(kernel, TritonInt8ScaledMMLinearKernel)})
    out["envs"].append(seen)
print(json.dumps(out))
'''


def rendered_units():
    """[(origin, environment)] of every vLLM unit and Ray environment file the example inventories render."""
    found = []
    for path in sorted(glob.glob(os.path.join(collect.RECORDED, "*.json"))):
        inventory = os.path.basename(path)[:-5]
        with open(path) as handle:
            hosts = json.load(handle)
        for host, out in sorted(hosts.items()):
            where = "inventories/%s, host %s" % (inventory, host)
            for entry, unit in sorted((out.get("vllm_units") or {}).items()):
                found.append(("%s, vLLM unit '%s'" % (where, entry), collect.unit_environment(unit)))
            for kind in ("head", "worker"):
                if out.get("ray_%s_env" % kind):
                    found.append(("%s, Ray %s environment" % (where, kind), collect.env_file(out["ray_%s_env" % kind])))
    assert found, "nothing recorded in %s" % collect.RECORDED
    return found


def spark_units():
    """The rendered units of GPU hosts (the simulation's vLLM CPU build sets VLLM_TARGET_DEVICE=cpu)."""
    units = [(origin, env) for origin, env in rendered_units() if env.get("VLLM_TARGET_DEVICE", "cuda") == "cuda"]
    assert units, "no GPU unit among the recorded renderings"
    return units


def ask(envs):
    if not os.access(VENV_PYTHON, os.X_OK):
        pytest.fail("no contract venv at %s: run make setup" % VENV_PYTHON)
    base = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_")}
    base["VLLM_LOGGING_LEVEL"] = "ERROR"
    base["SPARKFLEET_CONTRACT_DIR"] = HERE
    base["SPARKFLEET_CAPABILITY"] = rulebook.setting("gb10_compute_capability")
    proc = subprocess.run([VENV_PYTHON, "-c", ASK], input=json.dumps(envs), capture_output=True, text=True, env=base,
                          cwd="/", check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def release():
    units = spark_units()
    vllm_envs = [{k: v for k, v in env.items() if k.startswith("VLLM_")} for _origin, env in units]
    answer = ask(vllm_envs + [{}])
    return {"units": units, "answer": answer["envs"][:-1], "bare": answer["envs"][-1],
            "cuda_kernels": answer["cuda_kernels"]}


def test_every_gpu_unit_carries_the_rule_books_disabled_kernels():
    """vLLM units and Ray units (whose processes are the ray executor's GPU workers) alike."""
    wanted = rulebook.kernel_env().get(NAME)
    assert wanted == ",".join(rulebook.setting("vllm_disabled_kernels"))
    missing = ["%s: %s=%r" % (origin, NAME, env.get(NAME)) for origin, env in rendered_units() if env.get(NAME) != wanted]
    if missing:
        pytest.fail("%d unit(s) without %s=%s (rule cutlass_fp8_disabled_kernels):\n%s"
                    % (len(missing), NAME, wanted, "\n".join(missing)), pytrace=False)


def test_without_the_variable_the_release_picks_cutlass_on_sm121(release):
    """The stand-in is the one the rule is about: with nothing disabled, 12.1 gets the CUTLASS kernels."""
    fp8 = {(c["activation"], c["weight"], c["flashinfer"]): c["kernel"] for c in release["bare"]["fp8"]}
    assert fp8[("kFp8DynamicTokenSym", "kFp8StaticChannelSym", False)] == "CutlassFP8ScaledMMLinearKernel"
    assert fp8[("kFp8StaticTensorSym", "kFp8StaticTensorSym", True)] == "FlashInferFP8ScaledMMLinearKernel"
    int8 = [c["kernel"] for c in release["bare"]["int8"]]
    assert set(int8) == {"CutlassInt8ScaledMMLinearKernel"}


def test_the_release_reads_the_variable_as_rendered(release):
    """vllm/envs.py splits VLLM_DISABLED_KERNELS on ',' and strips nothing: each name must come back whole."""
    wanted = rulebook.setting("vllm_disabled_kernels")
    wrong = ["%s: vLLM reads %r" % (origin, seen["disabled"])
             for (origin, _env), seen in zip(release["units"], release["answer"]) if seen["disabled"] != wanted]
    if wrong:
        pytest.fail("%s does not read %s as the rule book's list %s:\n%s" % (VLLM, NAME, wanted, "\n".join(wrong)),
                    pytrace=False)


def test_every_disabled_name_is_a_kernel_the_release_selects(release):
    """A name the release has no CUDA linear kernel of disables nothing (a rename in a later release lands here)."""
    names = set(rulebook.setting("vllm_disabled_kernels"))
    for _origin, env in release["units"]:
        names |= set(env.get(NAME, "").split(",")) - {""}
    unknown = sorted(names - set(release["cuda_kernels"]))
    assert not unknown, "%s has no CUDA linear kernel %s (its kernels: %s)" % (
        VLLM, unknown, ", ".join(release["cuda_kernels"]))


def test_a_spark_unit_never_gets_a_cutlass_fp8_or_int8_kernel(release):
    """Every FP8 layer the release can describe takes a torch._scaled_mm kernel (cuBLASLt), a block-FP8 layer
    Triton's block matmul, with or without FlashInfer installed; every symmetric INT8 layer the Triton kernel. An asymmetric INT8 layer has no kernel left
    on SM121 (the CUTLASS one has no sm_12x INT8 build either): the release refuses it at model build."""
    bad = []
    for (origin, _env), seen in zip(release["units"], release["answer"]):
        for c in seen["fp8"]:
            # A block-FP8 layer (its own list from 0.20 on) takes Triton's block matmul, JIT for sm_121, or nothing.
            block_ok = c["weight"].endswith("BlockSym") and (c["kernel"] or "Triton").startswith("Triton")
            if not c["torch_scaled_mm"] and not block_ok:
                bad.append("%s: FP8 activation %s, weight %s, FlashInfer %s -> %s" % (
                    origin, c["activation"], c["weight"], "installed" if c["flashinfer"] else "absent", c["kernel"]))
        for c in seen["int8"]:
            if (c["symmetric"] and not c["triton"]) or (c["kernel"] or "").startswith("Cutlass"):
                bad.append("%s: INT8 channelwise=%s static=%s symmetric=%s -> %s" % (
                    origin, c["channelwise"], c["static"], c["symmetric"], c["kernel"]))
    if bad:
        pytest.fail("%s on capability 12.1 picks %d kernel(s) that fail on sm_121 (rule cutlass_fp8_disabled_kernels):"
                    "\n%s" % (VLLM, len(bad), "\n".join(bad[:40])), pytrace=False)
