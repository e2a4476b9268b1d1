# -*- coding: utf-8 -*-
"""The health probe's memory metrics (MemTotal, MemAvailable, memory PSI) from recorded /proc samples
(tests/fixtures/memory: the test bed's, idle and under a cgroup-bounded thrash; tests/fixtures/gb10: a GB10's
meminfo reconstructed from the seeds)."""

from __future__ import annotations

import importlib.util
import os

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PROBE = os.path.join(REPO, "roles", "fleet_health", "files", "sparkfleet-health-probe.py")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "memory")
GB10_MEMINFO = os.path.join(REPO, "tests", "fixtures", "gb10", "nominal", "proc", "meminfo")

_spec = importlib.util.spec_from_file_location("sparkfleet_health_probe_memory", PROBE)
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)


def _fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_meminfo_of_the_test_bed_in_bytes():
    found = probe.parse_meminfo(_fixture("meminfo.testbed-x86_64.txt"))
    assert found["MemTotal"] == 24684092 * 1024
    assert found["MemAvailable"] == 17642732 * 1024
    assert found["SwapTotal"] == 0
    # A count, not kB: as it is.
    assert found["HugePages_Total"] == 0


def test_meminfo_of_a_gb10():
    with open(GB10_MEMINFO) as handle:
        found = probe.parse_meminfo(handle.read())
    assert found["MemTotal"] == 127601212 * 1024
    assert found["MemAvailable"] == 121012736 * 1024


def test_meminfo_skips_what_it_cannot_read():
    assert probe.parse_meminfo("MemTotal: 1 kB\ngarbage\nMemAvailable:\nNoUnit: 7\n: 3 kB\n") == {"MemTotal": 1024,
                                                                                                  "NoUnit": 7}


@pytest.mark.parametrize("name,some,full", [
    ("pressure-memory.testbed-x86_64.txt",
     {"avg10": 0.0, "avg60": 0.0006, "avg300": 0.0012, "total": 70.384025},
     {"avg10": 0.0, "avg60": 0.0, "avg300": 0.0, "total": 31.51148}),
    ("pressure-memory.testbed-memcg-thrash.txt",
     {"avg10": 0.0325, "avg60": 0.0105, "avg300": 0.0035, "total": 71.243054},
     {"avg10": 0.0021, "avg60": 0.0012, "avg300": 0.0003, "total": 31.741943}),
])
def test_pressure_as_ratios_and_seconds(name, some, full):
    found = probe.parse_pressure(_fixture(name))
    assert set(found) == {"some", "full"}
    for kind, expected in (("some", some), ("full", full)):
        for key, value in expected.items():
            assert found[kind][key] == pytest.approx(value), (kind, key)


def test_pressure_without_full_or_with_a_broken_line():
    # /proc/pressure/cpu on kernels before 5.13 has no full line; a line missing a field is left out.
    text = "some avg10=1.50 avg60=0.50 avg300=0.10 total=2000000\nfull avg10=0.00 avg60=0.00 total=5\n"
    found = probe.parse_pressure(text)
    assert list(found) == ["some"] and found["some"]["total"] == 2.0
    assert probe.parse_pressure("") == {}


def test_memory_samples_render_as_metrics():
    samples = probe.memory_samples(probe.parse_meminfo(_fixture("meminfo.testbed-x86_64.txt")),
                                   probe.parse_pressure(_fixture("pressure-memory.testbed-memcg-thrash.txt")))
    assert ("sparkfleet_memory_total_bytes", {}, 24684092 * 1024) in samples
    assert ("sparkfleet_memory_available_bytes", {}, 17642732 * 1024) in samples
    assert ("sparkfleet_memory_pressure_ratio", {"kind": "some", "window": "10"}, 0.0325) in samples
    assert ("sparkfleet_memory_pressure_ratio", {"kind": "full", "window": "300"}, 0.0003) in samples
    assert ("sparkfleet_memory_pressure_stalled_seconds_total", {"kind": "some"}, 71.243054) in samples
    assert len(samples) == 2 + 2 * 4
    text = probe.render(samples)
    assert "# TYPE sparkfleet_memory_pressure_stalled_seconds_total counter" in text
    assert 'sparkfleet_memory_pressure_ratio{kind="some",window="300"} 0.0035' in text
    assert "sparkfleet_memory_available_bytes 18066157568" in text


def test_collect_reads_the_configured_files(tmp_path):
    config = {"memory": {"meminfo": GB10_MEMINFO,
                         "pressure": os.path.join(FIXTURES, "pressure-memory.testbed-x86_64.txt")}}
    samples, failures = probe.collect(config)
    assert failures == []
    assert ("sparkfleet_memory_available_bytes", {}, 121012736 * 1024) in samples
    assert ("sparkfleet_memory_pressure_ratio", {"kind": "some", "window": "300"}, 0.0012) in samples


def test_a_kernel_without_psi_exports_memory_alone(tmp_path):
    config = {"memory": {"meminfo": GB10_MEMINFO, "pressure": str(tmp_path / "absent")}}
    samples, failures = probe.collect(config)
    assert failures == []
    assert sorted(name for name, _labels, _value in samples) == ["sparkfleet_memory_available_bytes",
                                                                 "sparkfleet_memory_total_bytes"]


def test_no_meminfo_is_a_failed_check(tmp_path):
    samples, failures = probe.collect({"memory": {"meminfo": str(tmp_path / "absent"),
                                                  "pressure": str(tmp_path / "absent")}})
    assert samples == [] and failures == ["memory: no MemAvailable in %s" % (tmp_path / "absent")]


def test_no_memory_section_reads_nothing():
    assert probe.collect({}) == ([], [])


def test_the_memory_guard_is_a_unit_without_nccl(tmp_path):
    """The guard's unit (kind guard) is checked for being up; only GPU units must load the NCCL of the nccl role."""
    nccl_env = tmp_path / "nccl.env"
    nccl_env.write_text("LD_LIBRARY_PATH=/opt/sparkfleet/nccl/lib\n")
    proc = tmp_path / "proc" / "42"
    proc.mkdir(parents=True)
    (proc / "environ").write_bytes(b"PATH=/usr/bin\0")

    def runner(argv, timeout, env=None):
        return 0, "ActiveState=active\nNRestarts=0\nMainPID=42\n"

    config = {"nccl_env_file": str(nccl_env), "proc_root": str(tmp_path / "proc"),
              "units": [{"name": "earlyoom", "kind": "guard"}, {"name": "sparkfleet-ray-head", "kind": "ray"}]}
    samples, failures = probe.collect(config, runner=runner)
    assert ("sparkfleet_unit_active", {"unit": "earlyoom", "kind": "guard"}, True) in samples
    assert [s for s in samples if s[0] == "sparkfleet_unit_nccl_ours"] == [
        ("sparkfleet_unit_nccl_ours", {"unit": "sparkfleet-ray-head", "kind": "ray"}, False)]
    assert failures == ["unit sparkfleet-ray-head did not start with the NCCL of %s first" % nccl_env]
