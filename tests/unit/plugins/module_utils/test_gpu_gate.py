# -*- coding: utf-8 -*-
"""The GPU gate's judgement, on what it read on a real GPU (tests/fixtures/gpu/h100) and on shapes
derived from it; its probe, run for real in this Python with a preloaded library."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import gpu_gate, rulebook

HERE = os.path.dirname(__file__)
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "gpu", "h100")
RECORDED = json.load(open(os.path.join(FIXTURES, "gpu_gate-2.28.9-sm90.json")))
BUILT = "/opt/sparkfleet/nccl/2.28.9-sm90/lib/libnccl.so.2"
PIP = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"


def on_the_gpu_host(path):
    """realpath as it was on the recorded host (the soname link points to the versioned file)."""
    return path + ".28.9" if path == BUILT else path


def judge(reading, **kwargs):
    kwargs.setdefault("capability", "9.0")
    kwargs.setdefault("nccl_library", BUILT)
    kwargs.setdefault("vllm", False)
    return gpu_gate.judge(reading, "cuda", realpath=on_the_gpu_host, **kwargs)


def test_recorded_with_preload_passes():
    assert judge(RECORDED["with_preload"]["reading"]) == []
    assert RECORDED["with_preload"]["problems"] == []


def test_recorded_without_preload_fails_naming_the_pip_library_and_the_fix():
    problems = judge(RECORDED["without_preload"]["reading"])
    assert len(problems) == 1
    assert "ncclAllReduce -> unresolved" in problems[0]
    assert PIP in problems[0]
    assert "LD_PRELOAD=" + BUILT in problems[0]
    assert problems == RECORDED["without_preload"]["problems"]


def test_the_loader_bound_torch_to_the_built_library_only_with_the_preload():
    text = open(os.path.join(FIXTURES, "torch-nccl-bindings-2.28.9-sm90.txt")).read()
    with_preload, without = text.split("## with ")[1:]
    assert "libtorch_cuda.so [0] to %s [0]: normal symbol `ncclAllReduce'" % BUILT in with_preload
    assert "to %s [0]: normal symbol `ncclCommInitRankConfig'" % BUILT in with_preload
    assert PIP not in with_preload
    assert "to %s [0]: normal symbol `ncclAllReduce'" % PIP in without
    assert BUILT + " [0]" not in without


def test_cpu_build_of_torch_is_refused_with_the_index():
    reading = dict(RECORDED["with_preload"]["reading"], torch="2.10.0", torch_cuda=None, cuda_available=False)
    problems = judge(reading)
    assert len(problems) == 1
    assert "CPU build" in problems[0]
    assert "torch==2.10.0+cu129" in problems[0] and rulebook.setting("torch_index_url") in problems[0]


def test_no_gpu_seen_names_the_device_nodes():
    reading = dict(RECORDED["with_preload"]["reading"], cuda_available=False)
    problems = judge(reading)
    assert len(problems) == 1 and "/dev/nvidia-uvm" in problems[0]


def test_wrong_compute_capability():
    problems = judge(RECORDED["with_preload"]["reading"], capability=rulebook.setting("gb10_compute_capability"))
    assert problems == ["the GPU's compute capability is 9.0, not 12.1 (NVIDIA H100 80GB HBM3)"]


def test_vllm_c_is_checked_unless_turned_off():
    assert judge(RECORDED["with_preload"]["reading"], vllm=True) == [
        "vllm._C does not import: ModuleNotFoundError: No module named 'vllm'"]


def test_vllm_nccl_so_path_must_be_the_built_library():
    reading = dict(RECORDED["with_preload"]["reading"], vllm_nccl_so_path=PIP)
    assert any("VLLM_NCCL_SO_PATH is %s" % PIP in p for p in judge(reading))


def test_cpu_form_skips_cuda_but_not_nccl():
    reading = dict(RECORDED["without_preload"]["reading"], torch="2.13.0+cpu", torch_cuda=None, cuda_available=False)
    problems = gpu_gate.judge(reading, "cpu", capability="12.1", nccl_library=BUILT, vllm=False,
                              realpath=on_the_gpu_host)
    assert len(problems) == 1 and "not resolved" in problems[0]
    assert gpu_gate.summary(reading, "cpu").startswith("cpu form (simulation): torch 2.13.0+cpu, CUDA not checked")


def test_unknown_form():
    with pytest.raises(ValueError):
        gpu_gate.judge({}, "rocm")


@pytest.mark.parametrize("specs,form,bad", [
    (["vllm==0.19.0", "torch==2.10.0+cu129"], "cuda", False),
    (["torch==2.10.0+cu130"], "cuda", False),
    (["torch==2.10.0"], "cuda", True),
    (["torch==2.10.0+cpu"], "cuda", True),
    (["torch>=2.10"], "cuda", True),
    (["vllm==0.19.0"], "cuda", True),
    (["torch==2.13.0+cpu"], "cpu", False),
])
def test_torch_pin(specs, form, bad):
    problem = gpu_gate.torch_pin_problem(specs, form)
    assert bool(problem) is bad
    if bad:
        assert rulebook.setting("torch_index_url") in problem


def test_env_file_parsing():
    env = gpu_gate.parse_env_file("# c\n\nLD_PRELOAD=/a/libnccl.so.2\nX='y z'\n; other\nBAD\n")
    assert env == {"LD_PRELOAD": "/a/libnccl.so.2", "X": "y z"}


def _shared_library(tmp_path):
    """A real shared library exporting ncclAllReduce, built with the machine's C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.fail("no C compiler: the probe test needs one (gcc is on every machine of this project)")
    src = tmp_path / "nccl.c"
    src.write_text("int ncclAllReduce(void){return 4;}\nint ncclGetVersion(int*v){*v=22809;return 0;}\n")
    lib = tmp_path / "libnccl.so.2"
    subprocess.check_call([cc, "-shared", "-fPIC", "-o", str(lib), str(src)])
    return str(lib)


def test_probe_reads_what_the_preload_resolves(tmp_path):
    lib = _shared_library(tmp_path)
    names = ["ncclAllReduce", "ncclGetVersion", "ncclSend"]
    env = dict(os.environ, LD_PRELOAD=lib, VLLM_NCCL_SO_PATH=lib)
    out = subprocess.run([sys.executable, "-c", gpu_gate.PROBE, json.dumps(names)], env=env,
                         capture_output=True, text=True, check=True)
    reading = json.loads(out.stdout.splitlines()[-1])
    assert reading["entry_points"] == {"ncclAllReduce": lib, "ncclGetVersion": lib, "ncclSend": None}
    assert reading["nccl_mapped"] == [lib]
    # (torch is not in this interpreter: only the NCCL judgement is asked of it here)
    problems = [p for p in gpu_gate.judge(reading, "cpu", nccl_library=lib, entry_points=names, vllm=False)
                if not p.startswith("torch does not import")]
    assert len(problems) == 1 and "ncclSend -> unresolved" in problems[0]
    # Without the preload nothing resolves, whatever LD_LIBRARY_PATH says.
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path), VLLM_NCCL_SO_PATH=lib)
    env.pop("LD_PRELOAD", None)
    out = subprocess.run([sys.executable, "-c", gpu_gate.PROBE, json.dumps(names)], env=env,
                         capture_output=True, text=True, check=True)
    reading = json.loads(out.stdout.splitlines()[-1])
    assert set(reading["entry_points"].values()) == {None}
