# -*- coding: utf-8 -*-
"""The CUDA stack of the pinned vLLM on a Spark, read from the aarch64 wheels PyPI serves (tools/stack_wheels.py,
make upstream): the ELF files vLLM, torch and nvidia-nccl-cu13 install, judged for GB10 (compute capability 12.1).

* vLLM's extensions link the CUDA 13 runtime (DT_NEEDED libcudart.so.13), as DGX OS's CUDA 13.0 and torch's
  CUDA 13 build need; vLLM 0.19.0's aarch64 wheel linked libcudart.so.12.
* torch's aarch64 wheel is a CUDA 13 build: its CUDA requirements apply on aarch64 (no platform_machine ==
  "x86_64" marker), and libtorch_cuda.so carries SASS a 12.1 GPU runs.
* Which of vLLM's kernels a 12.1 GPU runs from SASS, which only after the driver compiles their PTX on first
  launch (JIT), and which have no image for it at all, per fatbin container (one compilation unit), as committed
  below: a rebuilt wheel that changes it fails here.
* The pip NCCL is the rule book's version and has no sm_121 SASS (rule nccl_sm121: the nccl role builds it
  for sm_121); what it does carry is asserted as found.

Everything is read from the extracted files (the summary only for libtorch_cuda.so, which is not kept). Nothing is
skipped: without the extraction the tests fail and say make upstream.
"""

from __future__ import annotations

import os
import re
import sys

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tools"))
sys.path.insert(0, HERE)

# Puts the collection on the path, as for the other contract tests.
import collect  # noqa: E402,F401  pylint: disable=unused-import

import stack_wheels  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook  # noqa: E402

VERSION = rulebook.setting("vllm_version")
FILES = stack_wheels.files_dir(VERSION)
TARGET = int(rulebook.setting("gb10_compute_capability").replace(".", ""))
CUDA_MAJOR = rulebook.setting("torch_cuda_major")
# Libraries whose soname carries the CUDA toolkit's major version.
CUDA_SONAME = re.compile(r"lib(cudart|nvrtc|cublas|cublasLt)\.so\.(\d+)$")

# vLLM 0.23.0's aarch64 wheel: its fatbin containers by what a compute capability 12.1 GPU runs. "sass": machine
# code it runs (sm_120, sm_120f); "jit": only PTX it can compile on first launch (and SASS for older GPUs);
# "none": only SASS for other GPUs (sm_90a, sm_100f, sm_80/87/89). FA3 and FlashMLA are Hopper / datacenter-Blackwell
# only (never chosen on 12.x); FA2 is compute_80 PTX only (unused: rule attention_backend takes TRITON_ATTN).
# vLLM 0.20.1 had _C 40/20/15, _moe_C 13/15/3: most of its Marlin kernels were PTX only (see MARLIN below).
GB10_IMAGES = {
    "vllm/_C.abi3.so": {"sass": 26, "jit": 5, "none": 10},
    "vllm/_C_stable_libtorch.abi3.so": {"sass": 42, "jit": 2, "none": 21},
    "vllm/_moe_C.abi3.so": {"sass": 26, "jit": 1, "none": 3},
    "vllm/_flashmla_C.abi3.so": {"sass": 0, "jit": 0, "none": 22},
    "vllm/_flashmla_extension_C.abi3.so": {"sass": 0, "jit": 0, "none": 2},
    "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so": {"sass": 0, "jit": 52, "none": 0},
    "vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so": {"sass": 0, "jit": 0, "none": 192},
}
# Marlin (rule moe_backend's MoE kernel, and gptq_marlin/awq_marlin's GEMM): the fatbin containers whose code names
# it. vllm#40923: Marlin built without SM12.x cubins runs through PTX JIT on GB10 and answers wrongly. In 0.20.1,
# 18 of 23 (_C) and 15 of 20 (_moe_C) were PTX only on 12.1; in 0.23.0 19 of each carry sm_120 SASS.
MARLIN = {
    "vllm/_C.abi3.so": {"sass": 19, "jit": 4, "none": 0},
    "vllm/_moe_C.abi3.so": {"sass": 19, "jit": 1, "none": 0},
}
WITHOUT_FATBIN = {"vllm/cumem_allocator.abi3.so", "vllm/spinloop.abi3.so"} | set(
    "vllm/third_party/deep_gemm/_C.cpython-3%d-aarch64-linux-gnu.so" % minor for minor in range(10, 15))
# nvidia-nccl-cu13 2.28.9's libnccl.so.2: SASS up to sm_120 and compute_120 PTX; 12.1 runs the sm_120 SASS of every
# container but 4, the sm_100f-only FP8 multimem (NVLS) symmetric kernels ncclSymkDevKernel_*_LDMC_*_f8e4m3/f8e5m2.
NCCL_SASS = ["sm_75", "sm_80", "sm_90", "sm_100", "sm_100f", "sm_110", "sm_120"]
NCCL_PTX = ["compute_120"]
NCCL_GB10_IMAGES = {"sass": 139, "jit": 0, "none": 4}
# The Spark's marker environment (pip evaluates Requires-Dist markers against it).
SPARK = dict(default_environment(), platform_machine="aarch64", platform_system="Linux", sys_platform="linux",
             os_name="posix", implementation_name="cpython", platform_python_implementation="CPython",
             python_version=rulebook.setting("python_version"), python_full_version=rulebook.setting("python_version")
             + ".3", extra="")


def _path(member):
    return os.path.join(FILES, member)


@pytest.fixture(scope="module")
def stack():
    summary = stack_wheels.load_summary(VERSION)
    if not summary:
        pytest.fail("%s is missing: run make upstream (tools/stack_wheels.py downloads and extracts vLLM %s's "
                    "aarch64 stack)" % (os.path.join(FILES, stack_wheels.SUMMARY), VERSION))
    return summary


@pytest.fixture(scope="module")
def extensions(stack):
    """{member: DT_NEEDED and fatbin summary} of every vllm/**/*.so, read from the extracted files."""
    members = [m for m, lib in stack["libraries"].items() if lib["package"] == "vllm"]
    missing = [m for m in members if not os.path.exists(_path(m))]
    if not members or missing:
        pytest.fail("vLLM's extensions are not extracted in %s (%s): run make upstream" % (FILES, missing))
    return dict((m, stack_wheels.library_summary(_path(m), TARGET, follow=False)) for m in members)


def _metadata(stack, package):
    version = stack["wheels"].get(package, {}).get("version")
    if not version:
        pytest.fail("%s is not in the resolution %s (absent: %s)" % (package, stack["report"], stack["absent"]))
    path = os.path.join(FILES, "%s-%s.dist-info" % (package.replace("-", "_"), version), "METADATA")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    return text.split("\n\n", 1)[0]


def _field(metadata, name):
    return [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith(name + ":")]


def test_the_extracted_stack_is_the_rule_books(stack):
    assert stack["vllm_version"] == VERSION
    assert stack["target"] == "sm_%d" % TARGET
    assert _field(_metadata(stack, "torch"), "Version") == [rulebook.setting("torch_version")]
    assert re.search(r"aarch64\.whl$", stack["wheels"]["vllm"]["file"]), stack["wheels"]["vllm"]


def test_vllm_extensions_link_the_cuda_13_runtime(extensions):
    """(a) Every extension with device code needs libcudart.so.13; no CUDA soname of another major anywhere."""
    foreign = dict((m, [n for n in lib["needed"] if CUDA_SONAME.match(n)
                        and int(CUDA_SONAME.match(n).group(2)) != CUDA_MAJOR]) for m, lib in extensions.items())
    assert not [m for m, names in foreign.items() if names], foreign
    cudart = "libcudart.so.%d" % CUDA_MAJOR
    device_code = [m for m, lib in extensions.items() if lib["fatbin"]]
    assert device_code and all(cudart in extensions[m]["needed"] for m in device_code), \
        dict((m, extensions[m]["needed"]) for m in device_code)
    # The extensions without the runtime carry no device code: the driver API (libcuda.so.1, with the driver) or
    # NVRTC of the same major, which builds their kernels at run time (spinloop).
    without = dict((m, lib["needed"]) for m, lib in extensions.items() if cudart not in lib["needed"])
    assert set(without) == {"vllm/cumem_allocator.abi3.so", "vllm/spinloop.abi3.so"}, without
    assert all("libcuda.so.1" in needed or "libnvrtc.so.%d" % CUDA_MAJOR in needed for needed in without.values())


def test_torch_requires_cuda_13_on_aarch64(stack):
    """(b) torch's CUDA requirements apply on aarch64 and are CUDA 13 packages."""
    requires = [Requirement(r) for r in _field(_metadata(stack, "torch"), "Requires-Dist")]
    cuda = [r for r in requires if r.name.startswith(("nvidia-", "cuda-")) or r.name == "triton"]
    assert cuda, [str(r) for r in requires]
    excluded = [str(r) for r in cuda if r.marker and not r.marker.evaluate(SPARK)]
    assert not excluded, "excluded on linux aarch64: %s" % excluded
    names = dict((r.name, r) for r in cuda)
    toolkit = names.get("cuda-toolkit")
    assert toolkit and "cudart" in toolkit.extras, [str(r) for r in cuda]
    assert re.fullmatch(r"==%d\.[\d.]+" % CUDA_MAJOR, str(toolkit.specifier)), str(toolkit)
    other = [n for n in names if n.startswith("nvidia-") and not n.endswith("-cu%d" % CUDA_MAJOR)]
    assert not other, other
    assert str(names["nvidia-nccl-cu%d" % CUDA_MAJOR].specifier) == "==%s" % rulebook.setting("nccl_version")


def test_torch_is_a_cuda_13_build_with_kernels_for_gb10(stack):
    """libtorch_cuda.so (summarised, not kept): CUDA 13 runtime, and every fatbin container has SASS 12.1 runs."""
    lib = stack["libraries"].get("torch/lib/libtorch_cuda.so")
    assert lib, "torch's wheel has no torch/lib/libtorch_cuda.so: a CPU build"
    assert "libcudart.so.%d" % CUDA_MAJOR in lib["needed"], lib["needed"]
    assert lib["fatbin"]["target_containers"] == {"sass": lib["fatbin"]["containers"], "jit": 0, "none": 0}
    assert "sm_%da" % TARGET in lib["fatbin"]["sass"], lib["fatbin"]["sass"]


def test_torch_finds_libnccl_through_its_rpath(stack):
    """Rule nccl_preload's premise: libtorch_cuda.so needs libnccl.so.2 through DT_RPATH (searched before
    LD_LIBRARY_PATH) pointing into the pip NCCL, and has no DT_RUNPATH (which would switch DT_RPATH off)."""
    lib = stack["libraries"].get("torch/lib/libtorch_cuda.so")
    assert lib, "torch's wheel has no torch/lib/libtorch_cuda.so: a CPU build"
    assert "libnccl.so.2" in lib["needed"], lib["needed"]
    assert "$ORIGIN/../../nvidia/nccl/lib" in lib["rpath"], lib["rpath"]
    assert not lib["runpath"], lib["runpath"]


def test_which_vllm_kernels_gb10_runs_from_sass(extensions):
    """(c) Per extension, fatbin containers with SASS for 12.1, with only PTX (JIT), or with no image."""
    found = dict((m, lib["fatbin"]["target_containers"]) for m, lib in extensions.items() if lib["fatbin"])
    assert found == GB10_IMAGES, found
    assert set(extensions) - set(found) == WITHOUT_FATBIN
    with_sm12x = sorted(m for m, lib in extensions.items()
                        if lib["fatbin"] and [s for s in lib["fatbin"]["sass"] if re.match(r"sm_12\d", s)])
    assert with_sm12x == ["vllm/_C.abi3.so", "vllm/_C_stable_libtorch.abi3.so", "vllm/_moe_C.abi3.so"], with_sm12x
    fa2 = extensions["vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so"]["fatbin"]
    assert (fa2["sass"], fa2["ptx"]) == (["sm_80"], ["compute_80"])


def test_marlin_runs_from_sm12x_sass_on_gb10(stack):
    """The release is chosen for this (rule torch_cuda_build): its Marlin kernels carry SASS a 12.1 GPU runs, not
    only PTX the driver compiles on first launch (vllm#40923's wrong answers on GB10). Read by tools/stack_wheels.py
    from the decompressed fatbins."""
    found = dict((m, lib["fatbin"]["followed"]["marlin"]) for m, lib in stack["libraries"].items()
                 if lib["package"] == "vllm" and lib.get("fatbin") and any(lib["fatbin"]["followed"]["marlin"].values()))
    assert found == MARLIN, found
    for member, counts in found.items():
        assert counts["sass"] > 3 * counts["jit"], (member, counts)


def test_no_vllm_kernel_is_arch_specific_to_another_12x_gpu(extensions):
    """sm_120a SASS runs on 12.0 only, never on GB10 (12.1); vLLM 0.19.0 built its FP4/FP8 CUTLASS kernels so."""
    elsewhere = dict((m, [s for s in lib["fatbin"]["sass"] if re.fullmatch(r"sm_12\da", s) and s != "sm_%da" % TARGET])
                     for m, lib in extensions.items() if lib["fatbin"])
    assert not [m for m, archs in elsewhere.items() if archs], elsewhere


def test_pip_nccl_is_the_rule_books_version_without_sm_121_sass(stack):
    """(d) nvidia-nccl-cu13 is rule nccl_sm121's version; its libnccl.so.2 has no sm_121 SASS, which the nccl
    role builds (nccl_nvcc_gencode). It does carry sm_120 SASS, which 12.1 can run (same major, lower minor)."""
    assert _field(_metadata(stack, "nvidia-nccl-cu%d" % CUDA_MAJOR), "Version") == [rulebook.setting("nccl_version")]
    member = "nvidia/nccl/lib/libnccl.so.2"
    if not os.path.exists(_path(member)):
        pytest.fail("%s is missing: run make upstream" % _path(member))
    fatbin = stack_wheels.library_summary(_path(member), TARGET)["fatbin"]
    required = rulebook.setting("nccl_required_sass")
    assert required == "sm_%d" % TARGET and "code=%s" % required in rulebook.setting("nccl_nvcc_gencode")
    assert not [s for s in fatbin["sass"] if s.startswith(required)], fatbin["sass"]
    assert (fatbin["sass"], fatbin["ptx"]) == (NCCL_SASS, NCCL_PTX), (fatbin["sass"], fatbin["ptx"])
    assert fatbin["target_containers"] == NCCL_GB10_IMAGES, fatbin["target_containers"]


def test_the_nccl_release_exports_every_symbol_torch_imports(stack):
    """Rule nccl_preload: the built NCCL is preloaded under libnccl.so.2's SONAME, so the loader takes no other for
    torch; a symbol torch imports that NCCL of the rule book's version lacks would fail `import torch` on every
    Spark. nvidia-nccl-cu13 is that version, built from the same sources as the nccl role's build."""
    torch = stack["libraries"]["torch/lib/libtorch_cuda.so"]["nccl_symbols"]
    nccl = stack["libraries"]["nvidia/nccl/lib/libnccl.so.2"]["nccl_symbols"]
    assert len(torch["imports"]) >= 30, torch
    assert set(torch["imports"]) <= set(nccl["exports"]), sorted(set(torch["imports"]) - set(nccl["exports"]))
    # torch 2.11 binds NCCL's device API (2.28's ncclDevComm*) and ncclAlltoAll: a NCCL older than 2.28 cannot serve.
    assert {"ncclDevCommCreate", "ncclDevCommDestroy", "ncclAlltoAll"} <= set(torch["imports"])
    # The stand-in of the simulation (tests/sim/standins/fake-nccl) stubs each, or the simulated `import torch` fails.
    with open(os.path.join(TOP, "tests", "sim", "standins", "fake-nccl", "src", "all_reduce.cu")) as handle:
        source = handle.read()
    stubs = set(re.findall(r"FAKE_NCCL_ENTRY\((nccl\w+)\)", source)) | set(re.findall(r"\b(nccl\w+)\(", source))
    assert set(torch["imports"]) <= stubs, sorted(set(torch["imports"]) - stubs)
