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

Pure Python: imported by the gpu_gate module, the unit tests and tools.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

FORMS = ("cuda", "cpu")

PROBE = r'''
import ctypes, json, os, sys
out = {"python": sys.executable, "entry_points": {}, "errors": {}}
names = json.loads(sys.argv[1])
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
try:
    import vllm._C
    out["vllm_c"] = vllm._C.__file__
except Exception as exc:
    out["errors"]["vllm_c"] = "%s: %s" % (type(exc).__name__, exc)


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
mapped = set()
with open("/proc/self/maps") as maps:
    for line in maps:
        path = line.split(None, 5)[5].strip() if len(line.split(None, 5)) == 6 else ""
        if "libnccl" in os.path.basename(path):
            mapped.add(os.path.realpath(path))
out["nccl_mapped"] = sorted(mapped)
out["vllm_nccl_so_path"] = os.environ.get("VLLM_NCCL_SO_PATH")
out["ld_preload"] = os.environ.get("LD_PRELOAD")
print(json.dumps(out))
'''


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
        name = text.split("==", 1)[0].split("[", 1)[0].strip().lower()
        if name == "torch" and "==" in text:
            return text.split("==", 1)[1].split(";", 1)[0].strip()
        if name == "torch":
            return ""
    return None


def is_cuda_local_version(version):
    """'2.10.0+cu129' -> True; '2.10.0', '2.10.0+cpu' -> False."""
    local = str(version or "").partition("+")[2]
    return local.startswith("cu") and local[2:].isdigit()


def torch_pin_problem(specs, form):
    """What is wrong with the torch pin of a virtualenv of that form, or None.

    A CUDA host must pin torch by its CUDA local version: PyPI's aarch64 torch of the
    same number is a CPU build, and only a local-version pin makes pip refuse it."""
    if form != "cuda":
        return None
    want = "%s+%s" % (rulebook.setting("torch_version"), rulebook.setting("torch_cuda_build"))
    index = rulebook.setting("torch_index_url")
    have = torch_requirement(specs)
    if have is None:
        return ("no torch pin: pip would take torch==%s from PyPI, a CPU build on aarch64 (rule torch_cuda_build); "
                "add 'torch==%s' and the index %s" % (rulebook.setting("torch_version"), want, index))
    if not is_cuda_local_version(have):
        return ("torch pinned as '%s', which PyPI satisfies with a CPU build on aarch64 (rule torch_cuda_build); "
                "pin 'torch==%s' from %s" % (have or "torch", want, index))
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
        index = rulebook.setting("torch_index_url")
        if not reading.get("torch_cuda"):
            problems.append("torch %s is a CPU build (torch.version.cuda is None): install torch==%s+%s from %s"
                            % (reading.get("torch"), rulebook.setting("torch_version"),
                               rulebook.setting("torch_cuda_build"), index))
        elif not reading.get("cuda_available"):
            problems.append("torch %s (CUDA %s) sees no GPU (torch.cuda.is_available() is False): check the driver "
                            "(nvidia-smi) and the device nodes (%s)"
                            % (reading.get("torch"), reading.get("torch_cuda"),
                               ", ".join(rulebook.setting("nvidia_device_nodes"))))
        elif capability and reading.get("capability") != str(capability):
            problems.append("the GPU's compute capability is %s, not %s (%s)"
                            % (reading.get("capability"), capability, reading.get("device_name")))
    if vllm and "vllm_c" in errors:
        problems.append("vllm._C does not import: %s" % errors["vllm_c"])
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
