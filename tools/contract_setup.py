#!/usr/bin/env python3
"""Fetch the pinned upstream releases the contract test runs against, once, into the cache.

    tools/contract_setup.py            fetch (if missing) and check the wheels, build the contract venv
    tools/contract_setup.py --check    check only (offline): the wheels' sha256 and the venv's stamp
    tools/contract_setup.py --lock     (re)write tools/contract.lock from what the rule book pins now

The versions come from the rule book (plugins/module_utils/rulebook.py: vllm_version,
ray_version, transformers_version); the expected sha256 of each wheel from
tools/contract.lock, committed. A partial or tampered download fails; a pin
the lock does not know (the rule book moved) fails and says how to refresh it.

Into ${SPARKFLEET_CACHE:-/var/cache/sparkfleet}:
  upstream/wheels/vllm-<v>-*.whl, ray-<v>-*.whl   the releases' own code
  upstream/vllm-<v>/w8a8_utils.py                  what tools/wheelhouse.sh would fetch the
                                                   same wheel for (it finds it and skips)
  contract-venv/                                   vllm and ray --no-deps, the local CPU torch,
                                                   tools/contract-requirements.txt; .stamp
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCK = os.path.join(TOP, "tools", "contract.lock")
REQUIREMENTS = os.path.join(TOP, "tools", "contract-requirements.txt")
CACHE = os.environ.get("SPARKFLEET_CACHE") or "/var/cache/sparkfleet"
WHEELS = os.path.join(CACHE, "upstream", "wheels")
VENV = os.path.join(CACHE, "contract-venv")
TORCH_PIN = os.environ.get("SPARKFLEET_CONTRACT_TORCH_PIN", "torch==2.13.0+cpu")
W8A8 = "vllm/model_executor/layers/quantization/utils/w8a8_utils.py"
LOCK_CMD = "make contract-lock   (python3 tools/contract_setup.py --lock)"


class SetupError(Exception):
    pass


def rulebook():
    sys.path.insert(0, os.path.join(TOP, "plugins", "module_utils"))
    import rulebook as rb  # noqa: E402  pure Python, no Ansible imports
    return rb


def pins():
    """[(distribution, version)] the contract fetches, read from the rule book."""
    rb = rulebook()
    return [("vllm", rb.setting("vllm_version")), ("ray", rb.setting("ray_version"))]


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_lock(path=LOCK):
    """{'vllm==0.19.0': (wheel file name, sha256)}."""
    entries = {}
    if not os.path.exists(path):
        return entries
    with open(path) as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            pin, wheel, digest = line.split()
            entries[pin] = (wheel, digest.split(":", 1)[1])
    return entries


def write_lock(entries, path=LOCK):
    lines = ["# sha256 of the upstream wheels the contract test runs against (tools/contract_setup.py).",
             "# The pins come from the rule book; after changing one there, refresh this file with",
             "#   " + LOCK_CMD,
             "# review the diff (the release's published hashes are on pypi.org) and commit it."]
    for pin in sorted(entries):
        wheel, digest = entries[pin]
        lines.append("%s  %s  sha256:%s" % (pin, wheel, digest))
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")


def pip_download(pin, dest):
    """pip download --no-deps one pin into dest; returns the wheel's path."""
    os.makedirs(dest, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "-d", dest, pin], check=True)
    dist, version = pin.split("==")
    found = glob.glob(os.path.join(dest, "%s-%s-*.whl" % (dist, version)))
    if not found:
        raise SetupError("pip download %s left no %s-%s-*.whl in %s" % (pin, dist, version, dest))
    return found[0]


def reuse_candidates(dist, version):
    """Wheels already on this machine (the sim wheelhouse has the Ray wheel)."""
    return sorted(glob.glob(os.path.join(CACHE, "wheelhouse", "%s-%s-*.whl" % (dist, version))))


def fetch(dist, version, lock, offline=False):
    """The checked wheel of dist==version in the cache; raises SetupError naming the fix."""
    pin = "%s==%s" % (dist, version)
    if pin not in lock:
        raise SetupError("tools/contract.lock has no sha256 for %s, the rule book's pin (it moved?). Refresh the "
                         "lock: %s, review and commit it" % (pin, LOCK_CMD))
    wheel, digest = lock[pin]
    path = os.path.join(WHEELS, wheel)
    if os.path.exists(path):
        got = sha256(path)
        if got == digest:
            return path
        if offline:
            raise SetupError("%s: sha256 %s, tools/contract.lock says %s (partial or tampered download); "
                             "run make setup to fetch it again" % (path, got, digest))
        print("contract: %s has sha256 %s, the lock says %s: fetching it again" % (path, got, digest))
        os.remove(path)
    if offline:
        raise SetupError("%s is not in the cache (%s); run make setup (or make upstream) first" % (pin, WHEELS))
    os.makedirs(WHEELS, exist_ok=True)
    for candidate in reuse_candidates(dist, version):
        if os.path.basename(candidate) == wheel and sha256(candidate) == digest:
            shutil.copyfile(candidate, path + ".part")
            os.replace(path + ".part", path)
            print("contract: %s from %s" % (wheel, os.path.dirname(candidate)))
            return path
    with tempfile.TemporaryDirectory(dir=WHEELS) as work:
        print("contract: downloading %s (no deps)" % pin)
        got_path = pip_download(pin, work)
        if os.path.basename(got_path) != wheel:
            raise SetupError("pip download %s gave %s, tools/contract.lock names %s (another platform or Python?); "
                             "refresh the lock: %s" % (pin, os.path.basename(got_path), wheel, LOCK_CMD))
        got = sha256(got_path)
        if got != digest:
            raise SetupError("%s downloaded with sha256 %s, tools/contract.lock says %s: refusing it (partial or "
                             "tampered download, or the lock is stale: %s)" % (wheel, got, digest, LOCK_CMD))
        os.replace(got_path, path)
    return path


def extract_w8a8(vllm_wheel, version):
    """The file the CUTLASS FP8 patch is proven against, so wheelhouse.sh needs no second download."""
    dest_dir = os.path.join(CACHE, "upstream", "vllm-%s" % version)
    dest = os.path.join(dest_dir, "w8a8_utils.py")
    if os.path.getsize(dest) if os.path.exists(dest) else 0:
        return
    os.makedirs(dest_dir, exist_ok=True)
    with zipfile.ZipFile(vllm_wheel) as zf:
        data = zf.read(W8A8)
    with open(dest + ".part", "wb") as handle:
        handle.write(data)
    os.replace(dest + ".part", dest)


def stamp_of(wheels, transformers):
    digest = hashlib.sha256()
    for path in (os.path.abspath(__file__), REQUIREMENTS):
        with open(path, "rb") as handle:
            digest.update(handle.read())
    for wheel in wheels:
        digest.update(os.path.basename(wheel).encode())
    digest.update(("%s %s %s" % (transformers, TORCH_PIN, sys.version)).encode())
    return digest.hexdigest()


def venv_ready(stamp):
    path = os.path.join(VENV, ".stamp")
    return os.path.exists(path) and open(path).read().strip() == stamp


def build_venv(wheels, transformers, stamp):
    print("contract: building %s (vllm and ray --no-deps, %s, what the parsers import)" % (VENV, TORCH_PIN))
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    pip = [os.path.join(VENV, "bin", "python"), "-m", "pip", "install", "-q", "--no-warn-conflicts"]
    subprocess.run(pip + ["--no-deps"] + list(wheels), check=True)
    # The +cpu local version exists only in pip's find-links: no CUDA torch can be pulled.
    subprocess.run(pip + [TORCH_PIN], check=True)
    subprocess.run(pip + ["transformers==%s" % transformers, "-r", REQUIREMENTS], check=True)
    probe = os.path.join(TOP, "tests", "contract", "upstream_probe.py")
    subprocess.run([os.path.join(VENV, "bin", "python"), probe, "--smoke"], check=True)
    with open(os.path.join(VENV, ".stamp"), "w") as handle:
        handle.write(stamp + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="offline: verify what is cached, fetch nothing")
    parser.add_argument("--lock", action="store_true", help="rewrite tools/contract.lock for the rule book's pins")
    args = parser.parse_args(argv)
    rb = rulebook()
    transformers = rb.setting("transformers_version")
    try:
        if args.lock:
            entries = read_lock()
            for dist, version in pins():
                with tempfile.TemporaryDirectory() as work:
                    path = pip_download("%s==%s" % (dist, version), work)
                    entries["%s==%s" % (dist, version)] = (os.path.basename(path), sha256(path))
            current = set("%s==%s" % p for p in pins())
            write_lock({k: v for k, v in entries.items() if k in current})
            print("contract: wrote %s; review the diff and commit it" % os.path.relpath(LOCK, TOP))
            return 0
        lock = read_lock()
        wheels = [fetch(dist, version, lock, offline=args.check) for dist, version in pins()]
        stamp = stamp_of(wheels, transformers)
        if args.check:
            if not venv_ready(stamp):
                raise SetupError("%s is missing or was built for other pins or requirements; run make setup "
                                 "(or make upstream)" % VENV)
            return 0
        extract_w8a8(wheels[0], rb.setting("vllm_version"))
        if venv_ready(stamp):
            print("contract: up to date (%s)" % ", ".join(os.path.basename(w) for w in wheels))
            return 0
        build_venv(wheels, transformers, stamp)
        print("contract: ready (%s)" % ", ".join(os.path.basename(w) for w in wheels))
        return 0
    except SetupError as exc:
        print("contract: %s" % exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
