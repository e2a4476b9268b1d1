#!/usr/bin/env python3
"""Resolve the virtualenv's pinned set for a Spark's platform with pip's own resolver.

    tools/platform_resolve.py            resolve (if not cached) against PyPI and write the reports
    tools/platform_resolve.py --check    offline: say whether the reports of the current pins are cached

A Spark is linux aarch64 with CPython 3.12; this machine is x86-64 with another Python.
pip's ``--platform``/``--python-version`` choose wheels for the target, but pip evaluates
environment markers (``platform_machine == "x86_64"``) against the interpreter it runs
in. So pip runs here in-process with the target's marker environment (platform.machine,
the Python version) and its own resolver does the rest, against PyPI, with
``--dry-run --report``. Two resolutions, each a JSON report under
``${SPARKFLEET_CACHE}/platform/<hash of the inputs>/``:

  pypi-release.json   the pins with torch at its PyPI release number (what pip takes
                      without a CUDA index): every pin must have an aarch64 wheel, and
                      the report shows what PyPI's torch brings on aarch64
  cuda-pin.json       the pins as the vllm_venv role installs them (torch with its CUDA
                      local version) against PyPI alone: pip must refuse, naming torch,
                      i.e. it can never fall back to the CPU build

tests/contract/test_platform.py judges both. The inputs come from the rule book.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("SPARKFLEET_CACHE") or "/var/cache/sparkfleet"
MACHINE = "aarch64"
PYTHON = "3.12"
# The manylinux tags an Ubuntu 24.04 aarch64 host (glibc 2.39) accepts, as pip must be told them one by one.
PLATFORMS = ["manylinux_2_%d_%s" % (n, MACHINE) for n in range(17, 40)] + ["manylinux2014_" + MACHINE, "linux_" + MACHINE]
INDEX = os.environ.get("SPARKFLEET_PLATFORM_INDEX", "https://pypi.org/simple")

# Runs pip's main in a child interpreter whose marker environment is the target's.
SHIM = r'''
import platform, sys
machine, version = sys.argv[1], sys.argv[2]
platform.machine = lambda: machine
platform.python_version = lambda: version + ".3"
platform.python_version_tuple = lambda: tuple((version + ".3").split("."))
from pip._internal.cli.main import main
sys.exit(main(sys.argv[3:]))
'''


def rulebook():
    sys.path.insert(0, os.path.join(TOP, "plugins", "module_utils"))
    import rulebook as rb  # noqa: E402  pure Python
    return rb


def pinned_set(rb=None):
    """The requirement specifiers of vllm_venv's default package list, from the rule book."""
    rb = rb or rulebook()
    torch = "%s+%s" % (rb.setting("torch_version"), rb.setting("torch_cuda_build"))
    return ["vllm==%s" % rb.setting("vllm_version"), "torch==%s" % torch,
            "triton==%s" % rb.setting("triton_version"), "transformers==%s" % rb.setting("transformers_version"),
            "ray[default]==%s" % rb.setting("ray_version")]


def pypi_release(specs):
    """The same specifiers with torch's local version dropped (what PyPI itself carries)."""
    return [s.split("+", 1)[0] if s.startswith("torch==") else s for s in specs]


def report_dir(specs):
    key = json.dumps({"specs": specs, "machine": MACHINE, "python": PYTHON, "index": INDEX,
                      "shim": SHIM, "platforms": PLATFORMS}, sort_keys=True)
    return os.path.join(CACHE, "platform", hashlib.sha256(key.encode()).hexdigest()[:16])


def resolve(specs, report, python=sys.executable):
    """pip's resolver for the target; returns (rc, output). The report is written only on success."""
    argv = [python, "-c", SHIM, MACHINE, PYTHON, "install", "--isolated", "--dry-run", "--ignore-installed",
            "--target", os.path.join(os.path.dirname(report), "target-never-written"), "--report", report,
            "--python-version", PYTHON, "--implementation", "cp", "--only-binary=:all:", "--index-url", INDEX,
            "--disable-pip-version-check"]
    for tag in PLATFORMS:
        argv += ["--platform", tag]
    # Neither this machine's pip configuration (constraints, find-links, mirrors) nor its environment: PyPI alone.
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_CONSTRAINT="", PIP_FIND_LINKS="", PIP_EXTRA_INDEX_URL="")
    proc = subprocess.run(argv + list(specs), capture_output=True, text=True, env=env, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="offline: are the reports of the current pins cached")
    args = parser.parse_args(argv)
    specs = pinned_set()
    where = report_dir(specs)
    release_report = os.path.join(where, "pypi-release.json")
    cuda_result = os.path.join(where, "cuda-pin.json")
    if os.path.exists(release_report) and os.path.exists(cuda_result):
        print("platform: resolved for linux %s / CPython %s (%s)" % (MACHINE, PYTHON, where))
        return 0
    if args.check:
        print("platform: no resolution of %s cached in %s: run make upstream (it resolves against PyPI)"
              % (" ".join(specs), where), file=sys.stderr)
        return 1
    os.makedirs(where, exist_ok=True)
    print("platform: resolving %s for linux %s / CPython %s with pip against %s" % (" ".join(specs), MACHINE, PYTHON,
                                                                                    INDEX))
    rc, out = resolve(pypi_release(specs), release_report)
    if rc != 0:
        # Kept for the test to judge (a pin without an aarch64 wheel is what it must report).
        with open(release_report, "w") as handle:
            json.dump({"failed": True, "rc": rc, "output": out[-4000:], "specs": pypi_release(specs)}, handle, indent=1)
    rc, out = resolve(specs, os.path.join(where, "cuda-pin-report.json"))
    with open(cuda_result, "w") as handle:
        json.dump({"rc": rc, "output": out[-4000:], "specs": specs}, handle, indent=1)
    print("platform: reports in %s" % where)
    return 0


if __name__ == "__main__":
    sys.exit(main())
