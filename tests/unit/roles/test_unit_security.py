# -*- coding: utf-8 -*-
"""The units the roles write pass `systemd-analyze security` at the project's thresholds.

Every example inventory as the roles' own templates render it (tests/contract/render.yml): vLLM
single node, multi-node mp (head and headless follower), the ray executor, the Ray head and
workers. The units are read from tests/contract/rendered/, which `make contract` proves is what
the templates render now (test_rendering_is_the_recorded_one), so they are rendered once a run. Each unit file is then judged by the real
`systemd-analyze security --offline=true --threshold=N` (systemd 252 on Debian 12), with N
from plugins/module_utils/unit_security.py; the same unit without its hardening must fail.
"""
import glob
import json
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import unit_security

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ANALYZE = shutil.which("systemd-analyze")

pytestmark = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed (Debian: package systemd)")


@pytest.fixture(scope="module")
def units(tmp_path_factory):
    """{label: (kind, path)} of every unit file the example inventories render."""
    out = tmp_path_factory.mktemp("units")
    found = {}
    for recorded in sorted(glob.glob(os.path.join(TOP, "tests", "contract", "rendered", "*.json"))):
        inv = os.path.basename(recorded)[:-len(".json")]
        with open(recorded) as handle:
            hosts = json.load(handle)
        for host, rendered in hosts.items():
            named = [("vllm", "sparkfleet-vllm-" + name, text) for name, text in rendered["vllm_units"].items()]
            named += [("ray", "sparkfleet-ray-head", rendered["ray_head_unit"]),
                      ("ray", "sparkfleet-ray-worker", rendered["ray_worker_unit"])]
            for kind, unit, text in named:
                if not text:
                    continue
                folder = out / inv / host
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / (unit + ".service")
                path.write_text(text)
                found["%s/%s/%s" % (inv, host, unit)] = (kind, str(path))
    return found


def analyze(path, kind):
    proc = subprocess.run([ANALYZE, "security", "--offline=true", "--no-pager",
                           "--threshold=%d" % unit_security.analyze_threshold(kind), os.path.basename(path)],
                          cwd=os.path.dirname(path), capture_output=True, text=True, check=False)
    found = unit_security.parse_exposure(proc.stdout)
    assert len(found) == 1, proc.stdout + proc.stderr
    return proc.returncode, found[0]["exposure"]


def test_every_kind_of_unit_was_rendered(units):
    labels = list(units)
    assert any(re.search(r"/sparkfleet-vllm-", l) for l in labels)
    assert any(l.endswith("sparkfleet-ray-head") for l in labels)
    assert any(l.endswith("sparkfleet-ray-worker") for l in labels)
    texts = {l: open(p).read() for l, (kind, p) in units.items() if kind == "vllm"}
    assert any("single node" in t for t in texts.values()), "no single-node vLLM unit"
    assert any(", ray)" in t for t in texts.values()), "no vLLM unit of the ray executor"
    assert any("--headless" in t for t in texts.values()), "no headless mp follower"


def test_units_pass_the_threshold(units):
    scores = {}
    for label, (kind, path) in sorted(units.items()):
        rc, exposure = analyze(path, kind)
        scores[label] = exposure
        assert rc == 0 and exposure <= unit_security.threshold(kind), (
            "%s: exposure %.1f above the %s threshold %.1f" % (label, exposure, kind, unit_security.threshold(kind)))
    assert scores


def _strip_hardening(text):
    """The unit as it was before hardening: everything from the '# Hardening' comment to the
    [Install] section goes, NoNewPrivileges stays (what the Ray units had)."""
    head, rest = text.split("# Hardening", 1)
    return head + "NoNewPrivileges=true\n\n[Install]" + rest.split("[Install]", 1)[1]


def test_units_without_hardening_fail(units, tmp_path):
    for label, (kind, path) in sorted(units.items()):
        with open(path) as handle:
            text = handle.read()
        bare = tmp_path / label.replace("/", "-")
        bare.mkdir(parents=True)
        target = bare / os.path.basename(path)
        target.write_text(_strip_hardening(text))
        rc, exposure = analyze(str(target), kind)
        assert rc != 0 and exposure > unit_security.threshold(kind), (label, exposure)


def test_memory_deny_write_execute_stays_off(units):
    """CUDA, Triton and torch JIT need writable+executable memory."""
    for label, (kind, path) in units.items():
        with open(path) as handle:
            text = handle.read()
        assert "MemoryDenyWriteExecute=false" in text, label
        assert "PrivateDevices=true" not in text, label
        assert "DevicePolicy=closed" in text and "DeviceAllow=char-nvidia* rw" in text, label


def test_every_unit_that_runs_gpu_work_has_unlimited_locked_memory(units):
    """vLLM, and Ray's head and workers (the ray executor's GPU workers run under them): NCCL registers its
    buffers with the RDMA device, which systemd's default of 8 MiB of locked memory does not allow."""
    for label, (_kind, path) in units.items():
        with open(path) as handle:
            text = handle.read()
        assert "\nLimitMEMLOCK=infinity\n" in text, label


def _rsyncd_unit(tmp_path, hardened=True):
    """roles/model_store/templates/rsyncd.service.j2, its variables filled in; without its sandbox
    (everything from the '# Sandbox' comment to [Install] but NoNewPrivileges) as it was before."""
    import jinja2
    path = os.path.join(TOP, "roles", "model_store", "templates", "rsyncd.service.j2")
    env = jinja2.Environment(trim_blocks=True)
    env.filters["comment"] = lambda text: "#\n# %s\n#" % text
    text = env.from_string(open(path).read()).render(
        ansible_managed="managed", model_store_fabric_address="192.168.100.10",
        model_store_rsync_config="/etc/sparkfleet/model_store/rsyncd.conf")
    if not hardened:
        head, rest = text.split("# Sandbox", 1)
        text = (head + "NoNewPrivileges=true\nProtectSystem=full\nProtectHome=true\nPrivateTmp=true\n\n[Install]"
                + rest.split("[Install]", 1)[1])
    target = tmp_path / ("hardened" if hardened else "bare")
    target.mkdir()
    unit = target / "sparkfleet-model-store-rsyncd.service"
    unit.write_text(text)
    return str(unit)


def test_model_store_rsync_daemon_passes_its_threshold(tmp_path):
    rc, exposure = analyze(_rsyncd_unit(tmp_path), "rsyncd")
    assert rc == 0 and exposure <= unit_security.threshold("rsyncd"), exposure
    rc, exposure = analyze(_rsyncd_unit(tmp_path, hardened=False), "rsyncd")
    assert rc != 0 and exposure > 8.0, exposure
