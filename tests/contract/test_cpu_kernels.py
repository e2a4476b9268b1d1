# -*- coding: utf-8 -*-
"""vLLM's own choice of its CPU kernels, asked of the pinned release, against what the collection assumes.

The GPU gate's CPU form (plugins/module_utils/gpu_gate.py) loads vLLM's kernels by calling the release's
``CpuPlatform.import_kernels()``, and `make setup` (tools/sim_cpu.py) tells a machine in its first minute whether
the simulation's vLLM can run on its CPU. Both rest on the release picking ``vllm._C`` (AVX-512 with BF16),
``vllm._C_AVX512`` or ``vllm._C_AVX2`` from torch's reading of the CPU. Here the release's own function runs in the
contract venv (vLLM of the rule book's version) with torch's two readings set for each kind of CPU, and records
which kernel module it imports (an import hook answers for the three, so nothing compiled for a CPU is loaded).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tools"))

import sim_cpu  # noqa: E402

CACHE = os.environ.get("SPARKFLEET_CACHE") or "/var/cache/sparkfleet"
VENV_PYTHON = os.path.join(CACHE, "contract-venv", "bin", "python")

ASK = r'''
import importlib.abc, importlib.machinery, json, sys, types
import torch
avx512, bf16 = json.loads(sys.argv[1])
torch.cpu._is_avx512_supported = lambda: avx512
torch.cpu._is_avx512_bf16_supported = lambda: bf16
asked = []


class Kernels(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name in ("vllm._C", "vllm._C_AVX512", "vllm._C_AVX2"):
            asked.append(name)
            return importlib.machinery.ModuleSpec(name, self)
        return None

    def create_module(self, spec):
        return types.ModuleType(spec.name)

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, Kernels())
from vllm.platforms.cpu import CpuPlatform
del asked[:]
CpuPlatform.import_kernels()
print(json.dumps(asked))
'''

# /proc/cpuinfo flags of three kinds of x86-64 CPU (abridged to what the choice reads).
CPUS = {
    "Intel Sapphire Rapids (AVX-512 with BF16)": "avx avx2 fma avx512f avx512dq avx512bw avx512vl avx512_bf16",
    "Intel Ice Lake (AVX-512, no BF16)": "avx avx2 fma avx512f avx512dq avx512bw avx512vl avx512_vnni",
    "AMD EPYC Zen 3 (AVX2, no AVX-512)": "avx avx2 fma f16c sse4_2",
}


def release_choice(avx512, bf16):
    if not os.access(VENV_PYTHON, os.X_OK):
        pytest.fail("no contract venv at %s: run make setup" % VENV_PYTHON)
    env = dict(os.environ, VLLM_LOGGING_LEVEL="ERROR", VLLM_TARGET_DEVICE="cpu")
    proc = subprocess.run([VENV_PYTHON, "-c", ASK, json.dumps([avx512, bf16])], capture_output=True, text=True,
                          env=env, cwd="/", check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("cpu", sorted(CPUS))
def test_the_release_loads_the_kernel_the_collection_expects(cpu):
    flags = CPUS[cpu].split()
    expected = sim_cpu.kernel_for(flags)
    assert release_choice(*sim_cpu.torch_reading(flags)) == ["vllm." + expected], cpu


def test_without_avx512_the_release_never_imports_the_avx512_build():
    """The GPU gate's old probe imported vllm._C on every CPU: the release does so only where torch sees
    AVX-512 with BF16."""
    assert release_choice(False, False) == ["vllm._C_AVX2"]
    assert "vllm._C" not in release_choice(True, False)


def test_a_cpu_without_avx2_is_told_in_the_first_minute():
    ok, message = sim_cpu.verdict("an old CPU", "sse4_2 avx".split(), "x86_64")
    assert not ok and "lacks avx2" in message and "_C_AVX2" in message
    ok, message = sim_cpu.verdict("AMD EPYC", CPUS["AMD EPYC Zen 3 (AVX2, no AVX-512)"].split(), "x86_64")
    assert ok and "vllm/_C_AVX2.abi3.so" in message
