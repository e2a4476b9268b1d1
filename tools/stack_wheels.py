#!/usr/bin/env python3
"""The CUDA stack a Spark's virtualenv really gets from PyPI, read from the wheels themselves.

    tools/stack_wheels.py                 download (if not cached) and extract what the contract reads
    tools/stack_wheels.py --report PATH   the same from another pip report (another vLLM, a scratch cache)
    tools/stack_wheels.py --check         offline: say whether the current vLLM's stack is cached

The pins resolve on linux aarch64 / CPython 3.12 (tools/platform_resolve.py) to vLLM's aarch64 wheel, torch's
aarch64 wheel and nvidia-nccl-cu13. Whether a Spark can run them is not in their names: it is in the ELF files
they carry. Which CUDA runtime the extensions link (DT_NEEDED), which GPU architectures their fatbins hold
machine code (SASS) for, and which only PTX that the driver compiles on first launch (JIT). GB10 is compute
capability 12.1: SASS for sm_120 or sm_120f runs on it (same major, lower minor), SASS for sm_120a does not
(arch-specific code runs only on its own minor), PTX runs after JIT, anything else has no image for it.

This tool downloads, once, the three wheels exactly as pip's resolution chose them (URL and sha256 from the
pip report, verified) into ${SPARKFLEET_CACHE}/stack-wheels/<vllm version>/ and extracts into the sibling
<vllm version>-files/ what tests/contract/test_stack_wheels.py reads: every vllm/**/*.so, torch's METADATA,
nvidia-nccl-cu13's METADATA and libnccl.so.2, and summary.json (per library: DT_NEEDED, RPATH/RUNPATH and the
SASS/PTX architectures of its fatbin; torch/lib/libtorch_cuda.so is summarised and not kept, it is large).

Fatbins are read without cuobjdump (CUDA is not installed here). A fatbin container (in .nv_fatbin, or
__nv_relfatbin for relocatable device code) is a 16-byte header, magic 0xBA55ED50, version 1, header size,
size of what follows, then entries, each with its own header (its size in the header) and a payload padded
to 8 bytes. An entry header (little endian): u16 kind (1 PTX, 2 ELF cubin), u16 version, u32 header size,
u64 padded payload size, u32 compressed size, ..., u32 arch at offset 28 (the SM number: 80, 90, 120),
u64 flags at offset 40. The flags were checked once against the cubins themselves (their `-arch` option in
.note.nv.tkinfo and the arch-specific bit of their ELF e_flags, after zstd decompression) in vLLM 0.19.0 and
0.20.1, torch 2.11.0 and nvidia-nccl-cu13 2.28.9: 0x8000 zstd-compressed payload (0x2000 LZ4, CUDA 12),
0x100000 arch-specific (sm_90a, sm_120a), 0x200000 family-specific (sm_100f, sm_120f). Entry headers are
plain whether or not the payload is compressed, so nothing is decompressed here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import mmap
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("SPARKFLEET_CACHE") or "/var/cache/sparkfleet"
PACKAGES = ("vllm", "torch", "nvidia-nccl-cu13")
SUMMARY = "summary.json"
# Bump when what is extracted or summarised changes: a cached summary of another layout is re-made.
LAYOUT = 1
# What is extracted (kept) from each wheel, and what is only summarised.
KEEP = {
    "vllm": re.compile(r"vllm/.+\.so(\.\d+)*$"),
    "torch": re.compile(r"torch-[^/]+\.dist-info/METADATA$"),
    "nvidia-nccl-cu13": re.compile(r"(nvidia_nccl_cu13-[^/]+\.dist-info/METADATA|nvidia/nccl/lib/libnccl\.so\.2)$"),
}
SUMMARISE_ONLY = {"torch": re.compile(r"torch/lib/libtorch_cuda\.so$")}

FATBIN_MAGIC = 0xBA55ED50
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
KIND_PTX, KIND_ELF = 1, 2
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY = 0x200000
DT_NEEDED, DT_RPATH, DT_RUNPATH = 1, 15, 29
SHT_DYNAMIC = 6


def say(message):
    print("stack-wheels: %s" % message, flush=True)


def rulebook():
    sys.path.insert(0, os.path.join(TOP, "plugins", "module_utils"))
    import rulebook as rb  # noqa: E402  pylint: disable=import-outside-toplevel
    return rb


def default_report():
    """platform_resolve's PyPI-release report of the rule book's pins."""
    sys.path.insert(0, os.path.join(TOP, "tools"))
    import platform_resolve  # noqa: E402  pylint: disable=import-outside-toplevel
    return os.path.join(platform_resolve.report_dir(platform_resolve.pinned_set()), "pypi-release.json")


def wheels_dir(version):
    return os.path.join(CACHE, "stack-wheels", version)


def files_dir(version):
    return os.path.join(CACHE, "stack-wheels", version + "-files")


def normalise(name):
    return re.sub(r"[-_.]+", "-", name).lower()


# ------------------------------------------------------------------- the resolution and the wheels
def chosen(report_path):
    """{package: {version, url, sha256, file}} of PACKAGES in a pip --report (absent ones left out)."""
    with open(report_path) as handle:
        report = json.load(handle)
    if report.get("failed"):
        raise SystemExit("stack-wheels: %s records a failed resolution:\n%s" % (report_path, report.get("output")))
    found = {}
    for item in report["install"]:
        name = normalise(item["metadata"]["name"])
        if name in PACKAGES:
            url = item["download_info"]["url"]
            found[name] = {"version": item["metadata"]["version"], "url": url,
                           "sha256": item["download_info"]["archive_info"]["hashes"]["sha256"],
                           "file": url.rsplit("/", 1)[1]}
    for name in ("vllm", "torch"):
        if name not in found:
            raise SystemExit("stack-wheels: %s resolves no %s" % (report_path, name))
    return found


def sha256(path):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from contract_setup import sha256 as of_file  # noqa: E402  pylint: disable=import-outside-toplevel
    return of_file(path)


def download(wheel, dest_dir):
    """The wheel at dest_dir, downloaded unless present with its sha256; returns (path, bytes downloaded)."""
    path = os.path.join(dest_dir, wheel["file"])
    if os.path.exists(path) and sha256(path) == wheel["sha256"]:
        return path, 0
    os.makedirs(dest_dir, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, part = tempfile.mkstemp(prefix=".%s." % wheel["file"], dir=dest_dir)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(wheel["url"], timeout=120) as response:
            for block in iter(lambda: response.read(1 << 20), b""):
                digest.update(block)
                out.write(block)
                size += len(block)
        if digest.hexdigest() != wheel["sha256"]:
            raise SystemExit("stack-wheels: %s has sha256 %s, the resolution says %s"
                             % (wheel["url"], digest.hexdigest(), wheel["sha256"]))
        os.chmod(part, 0o644)
        os.replace(part, path)
    finally:
        if os.path.exists(part):
            os.unlink(part)
    return path, size


# ------------------------------------------------------------------- ELF
def _sections(data):
    """[(name, type, offset, size, link)] of a little-endian ELF64 file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = [struct.unpack_from("<IIQQQQII", data, shoff + i * shentsize) for i in range(shnum)]
    names = raw[shstrndx][4]
    result = []
    for name, kind, _flags, _addr, offset, size, link, _info in raw:
        start = names + name
        result.append((bytes(data[start:data.find(b"\0", start)]).decode(), kind, offset, size, link))
    return result


def dynamic(data, sections=None):
    """{'needed': [...], 'rpath': [...], 'runpath': [...]} from the SHT_DYNAMIC section."""
    sections = sections or _sections(data)
    found = {"needed": [], "rpath": [], "runpath": []}
    keys = {DT_NEEDED: "needed", DT_RPATH: "rpath", DT_RUNPATH: "runpath"}
    for _name, kind, offset, size, link in sections:
        if kind != SHT_DYNAMIC:
            continue
        strtab = sections[link][2]
        for pos in range(offset, offset + size, 16):
            tag, value = struct.unpack_from("<qQ", data, pos)
            if tag == 0:
                break
            if tag in keys:
                start = strtab + value
                text = bytes(data[start:data.find(b"\0", start)]).decode()
                found[keys[tag]].extend(text.split(":") if tag != DT_NEEDED else [text])
    return found


SHT_DYNSYM = 11


def nccl_symbols(data, sections=None):
    """{'imports': [...], 'exports': [...]}: the dynamic symbols named nccl* a library needs from elsewhere
    (undefined) and the ones it defines (global or weak), read from .dynsym as the loader reads them."""
    sections = sections or _sections(data)
    found = {"imports": set(), "exports": set()}
    for _name, kind, offset, size, link in sections:
        if kind != SHT_DYNSYM:
            continue
        strtab = sections[link][2]
        for pos in range(offset, offset + size, 24):
            name_offset, info, _other, shndx = struct.unpack_from("<IBBH", data, pos)
            start = strtab + name_offset
            name = bytes(data[start:data.find(b"\0", start)]).decode()
            if not name.startswith("nccl"):
                continue
            if shndx == 0:
                found["imports"].add(name)
            elif info >> 4 in (1, 2):  # STB_GLOBAL, STB_WEAK
                found["exports"].add(name)
    return dict((key, sorted(names)) for key, names in found.items())


# ------------------------------------------------------------------- fatbins
def arch_name(kind, arch, flags):
    """sm_120f, sm_90a, compute_80 ..."""
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
    return "%s_%d%s" % ("compute" if kind == KIND_PTX else "sm", arch, suffix)


def fatbin_containers(blob, start=0, stop=None):
    """Each container of a fatbin section (blob[start:stop], read in place): a list of (kind, arch, flags)."""
    stop = len(blob) if stop is None else stop
    containers = []
    pos = blob.find(struct.pack("<I", FATBIN_MAGIC), start, stop)
    while pos >= 0:
        _magic, version, header, size = struct.unpack_from("<IHHQ", blob, pos)
        end = pos + header + size
        if version != 1 or header != 16 or end > stop:
            raise ValueError("fatbin container at %#x: version %d, header %d, size %d" % (pos, version, header, size))
        entries = []
        entry = pos + header
        while entry < end:
            kind, _version, entry_header, payload = struct.unpack_from("<HHIQ", blob, entry)
            arch, = struct.unpack_from("<I", blob, entry + 28)
            flags, = struct.unpack_from("<Q", blob, entry + 40)
            if entry_header < 64 or not 20 <= arch <= 300 or entry + entry_header + payload > end:
                raise ValueError("fatbin entry at %#x: kind %d, header %d, arch %d" % (entry, kind, entry_header, arch))
            entries.append((kind, arch, flags))
            entry += entry_header + payload
        containers.append(entries)
        pos = blob.find(struct.pack("<I", FATBIN_MAGIC), end, stop)
    return containers


def _by_arch(name):
    return int(re.search(r"\d+", name).group()), name


def runs_on(kind, arch, flags, target):
    """Whether an entry can run on compute capability `target` (121): SASS natively, PTX after JIT."""
    if flags & FLAG_ARCH_SPECIFIC:
        return arch == target
    if kind == KIND_PTX and not flags & FLAG_FAMILY:
        return arch <= target
    return arch // 10 == target // 10 and arch <= target


def fatbin_summary(data, sections, target):
    """SASS and PTX architectures of a library's fatbins, and per container (a compilation unit) what a GPU of
    compute capability `target` runs: its SASS, PTX compiled on first launch, or nothing."""
    containers = []
    found = []
    for name, _kind, offset, size, _link in sections:
        if name in FATBIN_SECTIONS:
            found.append(name)
            containers += fatbin_containers(data, offset, offset + size)
    if not found:
        return None
    sass, ptx = set(), set()
    native = jit = none = 0
    for entries in containers:
        for kind, arch, flags in entries:
            (ptx if kind == KIND_PTX else sass).add(arch_name(kind, arch, flags))
        if any(kind == KIND_ELF and runs_on(kind, arch, flags, target) for kind, arch, flags in entries):
            native += 1
        elif any(kind == KIND_PTX and runs_on(kind, arch, flags, target) for kind, arch, flags in entries):
            jit += 1
        else:
            none += 1
    return {"sections": found, "containers": len(containers), "sass": sorted(sass, key=_by_arch),
            "ptx": sorted(ptx, key=_by_arch), "target": "sm_%d" % target,
            "target_containers": {"sass": native, "jit": jit, "none": none}}


FLAG_ZSTD = 0x8000
# Kernels the contract follows by name inside the fatbins (decompressed): Marlin, the rule book's MoE and
# GPTQ/AWQ kernel (vllm#40923: built without SM12.x cubins it runs through PTX JIT and answers wrongly on GB10).
FOLLOWED_KERNELS = {"marlin": b"arlin"}


def _payload(data, offset, size, flags):
    blob = bytes(data[offset:offset + size])
    if flags & FLAG_ZSTD:
        # The payload is padded after its zstd frame: zstd decodes the frame, then complains of the padding.
        blob = subprocess.run(["zstd", "-d", "-c", "-q"], input=blob, capture_output=True, check=False).stdout
    return blob


def followed_kernels(data, sections, target):
    """{name: {sass, jit, none}}: the fatbin containers whose code names a FOLLOWED_KERNELS kernel, by what a GPU of
    compute capability `target` runs (as in fatbin_summary). Needs the zstd tool for compressed entries."""
    found = dict((name, {"sass": 0, "jit": 0, "none": 0}) for name in FOLLOWED_KERNELS)
    for name, _kind, offset, size, _link in sections:
        if name not in FATBIN_SECTIONS:
            continue
        pos = data.find(struct.pack("<I", FATBIN_MAGIC), offset, offset + size)
        while pos >= 0:
            _magic, _version, header, length = struct.unpack_from("<IHHQ", data, pos)
            end, entry, entries, text = pos + header + length, pos + header, [], b""
            while entry < end:
                kind, _v, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
                arch, = struct.unpack_from("<I", data, entry + 28)
                flags, = struct.unpack_from("<Q", data, entry + 40)
                entries.append((kind, arch, flags))
                text += _payload(data, entry + entry_header, payload, flags)
                entry += entry_header + payload
            for kernel, needle in FOLLOWED_KERNELS.items():
                if needle in text:
                    if any(k == KIND_ELF and runs_on(k, a, f, target) for k, a, f in entries):
                        found[kernel]["sass"] += 1
                    elif any(k == KIND_PTX and runs_on(k, a, f, target) for k, a, f in entries):
                        found[kernel]["jit"] += 1
                    else:
                        found[kernel]["none"] += 1
            pos = data.find(struct.pack("<I", FATBIN_MAGIC), end, offset + size)
    return found


def library_summary(path, target, follow=True):
    """DT_NEEDED, RPATH/RUNPATH and the fatbin summary of one shared library (with FOLLOWED_KERNELS: slow, it
    decompresses every entry)."""
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        sections = _sections(data)
        summary = dynamic(data, sections)
        summary["size"] = len(data)
        summary["nccl_symbols"] = nccl_symbols(data, sections)
        summary["fatbin"] = fatbin_summary(data, sections, target)
        if summary["fatbin"] and follow:
            summary["fatbin"]["followed"] = followed_kernels(data, sections, target)
    return summary


# ------------------------------------------------------------------- extraction
def extract(package, wheel_path, dest, target):
    """Extract KEEP members of one wheel into dest; summarise its libraries. {member: summary or None}."""
    libraries = {}
    with zipfile.ZipFile(wheel_path) as archive:
        for member in archive.namelist():
            keep = KEEP[package].search(member)
            only = package in SUMMARISE_ONLY and SUMMARISE_ONLY[package].search(member)
            if not keep and not only:
                continue
            if keep:
                path = archive.extract(member, dest)
            else:
                fd, path = tempfile.mkstemp(prefix=".summarise.", dir=dest)
                with os.fdopen(fd, "wb") as out, archive.open(member) as source:
                    shutil.copyfileobj(source, out, 1 << 20)
            try:
                if re.search(r"\.so(\.\d+)*$", member):
                    libraries[member] = dict(library_summary(path, target), package=package, kept=bool(keep))
            finally:
                if not keep:
                    os.unlink(path)
    return libraries


def load_summary(version):
    path = os.path.join(files_dir(version), SUMMARY)
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def up_to_date(wheels, summary):
    return bool(summary) and summary.get("layout") == LAYOUT and summary.get("wheels") == wheels


def build(report_path):
    """Download and extract; returns the summary."""
    wheels = chosen(report_path)
    version = wheels["vllm"]["version"]
    target = int(rulebook().setting("gb10_compute_capability").replace(".", ""))
    stamps = dict((name, {"version": w["version"], "file": w["file"], "sha256": w["sha256"]})
                  for name, w in wheels.items())
    paths, fetched = {}, 0
    for name in PACKAGES:
        if name not in wheels:
            say("%s: not in the resolution (%s)" % (name, report_path))
            continue
        start = time.monotonic()
        paths[name], size = download(wheels[name], wheels_dir(version))
        fetched += size
        if size:
            say("%s: downloaded %s (%.1f MB, %.1f s, sha256 verified)"
                % (name, wheels[name]["file"], size / 1e6, time.monotonic() - start))
    summary = load_summary(version)
    if not fetched and up_to_date(stamps, summary) and all(
            os.path.exists(os.path.join(files_dir(version), member))
            for member, lib in summary["libraries"].items() if lib["kept"]):
        say("up to date (vllm %s in %s)" % (version, files_dir(version)))
        return summary
    dest = files_dir(version)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    start = time.monotonic()
    libraries = {}
    for name, path in paths.items():
        libraries.update(extract(name, path, dest, target))
    summary = {"layout": LAYOUT, "vllm_version": version, "report": os.path.abspath(report_path),
               "target": "sm_%d" % target, "wheels": stamps, "absent": [n for n in PACKAGES if n not in wheels],
               "libraries": libraries}
    with open(os.path.join(dest, SUMMARY), "w") as handle:
        json.dump(summary, handle, indent=1, sort_keys=True)
    say("extracted and summarised %d libraries into %s (%.1f s)" % (len(libraries), dest, time.monotonic() - start))
    return summary


def describe(summary):
    """One line per library: what it links and what its fatbin holds."""
    for member, lib in sorted(summary["libraries"].items()):
        cuda = [n for n in lib["needed"] if re.match(r"lib(cuda|cudart|nvrtc|cublas|nccl|torch_cuda)", n)]
        line = "  %-62s needs %s" % (member, " ".join(cuda) or "-")
        fat = lib["fatbin"]
        if fat:
            line += "\n  %-62s SASS %s; PTX %s; %s: %s" % (
                "", " ".join(fat["sass"]) or "-", " ".join(fat["ptx"]) or "-", fat["target"], fat["target_containers"])
        print(line)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--report", help="a pip --report JSON (default: platform_resolve's pypi-release.json)")
    parser.add_argument("--check", action="store_true", help="offline: is the rule book's vLLM stack extracted")
    parser.add_argument("--quiet", action="store_true", help="no per-library lines")
    args = parser.parse_args(argv)
    if args.check:
        version = rulebook().setting("vllm_version")
        summary = load_summary(version)
        if not summary or summary.get("layout") != LAYOUT:
            print("stack-wheels: vllm %s's wheels are not extracted in %s: run make upstream"
                  % (version, files_dir(version)), file=sys.stderr)
            return 1
        say("extracted (vllm %s in %s)" % (version, files_dir(version)))
        return 0
    report = args.report
    if not report:
        try:
            report = default_report()
        except (KeyError, ImportError) as error:
            raise SystemExit("stack-wheels: platform_resolve cannot name its report (%s): pass --report"
                             % error) from error
    if not os.path.exists(report):
        raise SystemExit("stack-wheels: %s is missing: run tools/platform_resolve.py (make upstream)" % report)
    summary = build(report)
    if not args.quiet:
        describe(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
