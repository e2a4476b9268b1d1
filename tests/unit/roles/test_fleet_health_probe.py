# -*- coding: utf-8 -*-
"""The health probe of sparkfleet.gb10.fleet_health: rendering, parsing, and one run end to end
against a local HTTP server that answers like a vLLM endpoint with an API key."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
from ansible_collections.sparkfleet.gb10.plugins.modules import gb10_facts, os_update_plan

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PROBE = os.path.join(REPO, "roles", "fleet_health", "files", "sparkfleet-health-probe.py")
GB10 = os.path.join(REPO, "tests", "fixtures", "gb10")
RAY = os.path.join(REPO, "tests", "fixtures", "ray")  # real Ray 2.60.0 recordings
LABEL_RE = re.compile(r'(\w+)="((?:[^"\\\\]|\\\\.)*)"')
VARIANTS = sorted(d for d in os.listdir(GB10) if os.path.isdir(os.path.join(GB10, d)))

_spec = importlib.util.spec_from_file_location("sparkfleet_health_probe", PROBE)
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)


def parse_exposition(text):
    """{(name, frozenset(labels)): value} of Prometheus text format, checking HELP/TYPE come first."""
    samples, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if line.startswith("#") or not line:
            continue
        head, value = line.rsplit(" ", 1)
        name, dummy, labels = head.partition("{")
        assert name in typed, "%s before its TYPE line" % name
        pairs = dict(LABEL_RE.findall(labels.rstrip("}"))) if labels else {}
        samples[(name, frozenset(pairs.items()))] = float(value)
    return samples


def test_render_groups_by_metric_with_help_and_type():
    text = probe.render([
        ("sparkfleet_vllm_endpoint_up", {"model": "a", "port": "8000"}, True),
        ("sparkfleet_fabric_mtu", {"ifname": "enp1s0f1np1"}, 1500),
        ("sparkfleet_vllm_endpoint_up", {"port": "8001", "model": "b"}, False),
    ])
    lines = text.splitlines()
    assert lines[:4] == [
        "# HELP sparkfleet_vllm_endpoint_up " + probe.METRICS["sparkfleet_vllm_endpoint_up"][1],
        "# TYPE sparkfleet_vllm_endpoint_up gauge",
        'sparkfleet_vllm_endpoint_up{model="a",port="8000"} 1',
        'sparkfleet_vllm_endpoint_up{model="b",port="8001"} 0',
    ]
    assert 'sparkfleet_fabric_mtu{ifname="enp1s0f1np1"} 1500' in lines
    assert text.endswith("\n")


def test_render_escapes_label_values():
    text = probe.render([("sparkfleet_driver_info", {"kernel_module": 'a"b\\c\nd', "userspace": "x"}, 1)])
    assert 'kernel_module="a\\"b\\\\c\\nd"' in text


@pytest.mark.parametrize("sample", [
    ("sparkfleet_no_such_metric", {}, 1),
    ("sparkfleet_fabric_mtu", {}, "9000"),
    ("sparkfleet_fabric_mtu", {}, None),
])
def test_render_refuses_unknown_names_and_non_numbers(sample):
    with pytest.raises(ValueError):
        probe.render([sample])


def test_write_atomically_replaces_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "sparkfleet_health.prom"
    target.write_text("old\n")
    probe.write_atomically(str(tmp_path), "sparkfleet_health.prom", "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(os.listdir(tmp_path)) == ["sparkfleet_health.prom"]


def test_write_atomically_keeps_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "sparkfleet_health.prom"
    target.write_text("old\n")

    def broken(_src, _dst):
        raise OSError("disk full")

    monkeypatch.setattr(probe.os, "replace", broken)
    with pytest.raises(OSError):
        probe.write_atomically(str(tmp_path), "sparkfleet_health.prom", "new\n")
    assert target.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["sparkfleet_health.prom"]


def test_parse_env_file():
    text = "# key of tiny\nexport VLLM_API_KEY='s3cr=t'\nHF_TOKEN=\"hf_x\"\n\nbroken line\n"
    assert probe.parse_env_file(text) == {"VLLM_API_KEY": "s3cr=t", "HF_TOKEN": "hf_x"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_driver_versions_agree_with_gb10_facts(variant):
    """The probe reads the recorded driver shapes exactly as the gb10_facts module does."""
    root = os.path.join(GB10, variant)
    with open(os.path.join(root, "proc", "driver", "nvidia", "version")) as handle:
        text = handle.read()
    assert probe.parse_proc_version(text) == gb10_facts.parse_proc_version(text)
    rc, out = probe.run([os.path.join(root, "bin", "nvidia-smi"), "--query-gpu=driver_version",
                         "--format=csv,noheader"], 10)
    expected = (gb10_facts.parse_smi_query("x, 1.0, " + out.strip())["driver_version"] if rc == 0
                else gb10_facts.parse_nvml_mismatch(out))
    assert probe.parse_smi_version(rc, out) == expected
    assert expected is not None


def test_reboot_pending_is_a_disagreement():
    root = os.path.join(GB10, "reboot_pending")
    config = {"driver": {"proc_version": os.path.join(root, "proc", "driver", "nvidia", "version"),
                         "nvidia_smi": os.path.join(root, "bin", "nvidia-smi")}}
    samples, failures = probe.collect(config)
    assert ("sparkfleet_driver_versions_agree", {}, False) in samples
    assert any(line.startswith("driver: kernel module") for line in failures)


def test_missing_driver_is_unknown_not_a_failure(tmp_path):
    config = {"driver": {"proc_version": str(tmp_path / "absent"), "nvidia_smi": str(tmp_path / "no-nvidia-smi")}}
    samples, failures = probe.collect(config)
    assert samples == [("sparkfleet_driver_info", {"kernel_module": "unknown", "userspace": "unknown"}, 1)]
    assert failures == []


def ray_recording(name):
    with open(os.path.join(RAY, name)) as handle:
        return handle.read()


def test_ray_status_counts_active_members():
    assert probe.parse_ray_status(ray_recording("status-two-alive.txt")) == 2
    # A killed worker's raylet: it leaves Active (Ray 2.60 lists no failure line).
    assert probe.parse_ray_status(ray_recording("status-worker-dead.txt")) == 1
    assert probe.parse_ray_status("") == 0


def test_units_and_ray_from_commands():
    ray_text = ray_recording("status-worker-dead.txt")
    calls = []

    def runner(argv, timeout, env=None):
        calls.append((argv, env))
        if argv[0] == "systemctl":
            return 0, ("ActiveState=failed\nNRestarts=3\nMainPID=0\n" if "vllm" in argv[-1]
                       else "ActiveState=active\nNRestarts=0\nMainPID=0\n")
        return 0, ray_text

    config = {"units": [{"name": "sparkfleet-vllm-tiny", "kind": "vllm"}, {"name": "sparkfleet-ray-head", "kind": "ray"}],
              "ray": {"expected_members": 2, "ray": "/opt/v/bin/ray", "address": "192.168.100.10:6379",
                      "token_file": "/etc/sparkfleet/ray/auth_token"}}
    samples, failures = probe.collect(config, runner=runner)
    vllm = {"unit": "sparkfleet-vllm-tiny", "kind": "vllm"}
    assert ("sparkfleet_unit_active", vllm, False) in samples
    assert ("sparkfleet_unit_failed", vllm, True) in samples
    assert ("sparkfleet_unit_restarts", vllm, 3) in samples
    assert ("sparkfleet_unit_active", {"unit": "sparkfleet-ray-head", "kind": "ray"}, True) in samples
    assert ("sparkfleet_ray_members_alive", {}, 1) in samples
    assert ("sparkfleet_ray_members_expected", {}, 2) in samples
    assert failures == ["unit sparkfleet-vllm-tiny is not active", "ray: 1 of 2 members alive"]
    ray_call = [c for c in calls if c[0][0] == "/opt/v/bin/ray"][0]
    assert ray_call[0] == ["/opt/v/bin/ray", "status", "--address=192.168.100.10:6379"]
    assert ray_call[1]["RAY_AUTH_TOKEN_PATH"] == "/etc/sparkfleet/ray/auth_token"


def test_fabric_mtu_and_pings(tmp_path):
    (tmp_path / "enp1s0f1np1").mkdir()
    (tmp_path / "enp1s0f1np1" / "mtu").write_text("1500\n")
    pinged = []

    def runner(argv, timeout, env=None):
        pinged.append(argv)
        return (0 if argv[-1] == "192.168.100.11" else 1), ""

    config = {"fabric": {"ifname": "enp1s0f1np1", "sysfs_net": str(tmp_path), "mtu": 9000, "ping_payload": 8972,
                         "peers": [{"name": "spark-2", "address": "192.168.100.11"},
                                   {"name": "spark-3", "address": "192.168.100.12"}]}}
    samples, failures = probe.collect(config, runner=runner)
    port = {"ifname": "enp1s0f1np1"}
    assert ("sparkfleet_fabric_mtu", port, 1500) in samples
    assert ("sparkfleet_fabric_mtu_expected", port, 9000) in samples
    assert ("sparkfleet_fabric_peer_reachable", dict(port, peer="spark-2", address="192.168.100.11"), True) in samples
    assert ("sparkfleet_fabric_peer_reachable", dict(port, peer="spark-3", address="192.168.100.12"), False) in samples
    assert pinged[0] == ["ping", "-c", "1", "-W", "2", "-M", "do", "-s", "8972", "192.168.100.11"]
    assert failures == ["fabric enp1s0f1np1: MTU 1500, expected 9000",
                        "fabric: no jumbo don't-fragment ping reply from spark-3 (192.168.100.12)"]


def test_missing_fabric_interface_reads_as_mtu_zero(tmp_path):
    samples, _failures = probe.collect({"fabric": {"ifname": "nope", "sysfs_net": str(tmp_path), "mtu": 9000,
                                                   "ping_payload": 8972}})
    assert ("sparkfleet_fabric_mtu", {"ifname": "nope"}, 0) in samples


@pytest.fixture()
def vllm(serve_vllm):
    """A stand-in for `vllm serve --api-key k-123` serving tiny (tests/unit/fake_vllm.py): /health open, /v1/*
    only with the bearer key; it answers a completion " Paris"."""
    return serve_vllm("tiny", served="tiny", key="k-123", complete=lambda body, nth: " Paris")[0]


def _run_main(tmp_path, port, key_text):
    keyfile = tmp_path / "tiny.env"
    if key_text is not None:
        keyfile.write_text(key_text)
    out = tmp_path / "textfile"
    out.mkdir(exist_ok=True)
    config = {"textfile_dir": str(out), "timeout": 5,
              "endpoints": [{"name": "tiny", "served_name": "tiny", "port": port, "api_key_file": str(keyfile)}]}
    (tmp_path / "probe.json").write_text(json.dumps(config))
    assert probe.main(["--config", str(tmp_path / "probe.json")]) == 0
    return parse_exposition((out / "sparkfleet_health.prom").read_text())


def _value(samples, name, **labels):
    return samples[(name, frozenset(labels.items()))]


def test_main_healthy_endpoint_with_key(tmp_path, vllm):
    port = vllm.port
    samples = _run_main(tmp_path, port, "VLLM_API_KEY=k-123\n")
    assert _value(samples, "sparkfleet_vllm_endpoint_up", model="tiny", port=str(port)) == 1
    for check in ("health", "models", "completion"):
        assert _value(samples, "sparkfleet_vllm_endpoint_check", model="tiny", port=str(port), check=check) == 1
    assert _value(samples, "sparkfleet_health_probe_last_run_timestamp_seconds") > 1.7e9
    assert [(r["model"], r["max_tokens"]) for r in vllm.requests] == [("tiny", 1)]  # one token of its served name


def test_main_without_the_key_file_is_unauthorized(tmp_path, vllm):
    port = vllm.port
    samples = _run_main(tmp_path, port, None)
    labels = {"model": "tiny", "port": str(port)}
    assert _value(samples, "sparkfleet_vllm_endpoint_up", **labels) == 0
    assert _value(samples, "sparkfleet_vllm_endpoint_check", check="health", **labels) == 1
    assert _value(samples, "sparkfleet_vllm_endpoint_check", check="models", **labels) == 0


def test_main_wedged_engine_fails_the_completion_only(tmp_path, vllm):
    port = vllm.port
    vllm.complete = lambda body, nth: (500, {"error": "EngineDeadError"})
    samples = _run_main(tmp_path, port, "VLLM_API_KEY=k-123\n")
    labels = {"model": "tiny", "port": str(port)}
    assert _value(samples, "sparkfleet_vllm_endpoint_check", check="health", **labels) == 1
    assert _value(samples, "sparkfleet_vllm_endpoint_check", check="completion", **labels) == 0
    assert _value(samples, "sparkfleet_vllm_endpoint_up", **labels) == 0


def test_main_endpoint_down(tmp_path):
    samples = _run_main(tmp_path, 9, "VLLM_API_KEY=k-123\n")  # port 9 (discard): nothing listens
    assert _value(samples, "sparkfleet_vllm_endpoint_up", model="tiny", port="9") == 0
    assert ("sparkfleet_vllm_completion_seconds", frozenset({"model": "tiny", "port": "9"}.items())) not in samples


def test_main_unreadable_config_exits_2(tmp_path):
    assert probe.main(["--config", str(tmp_path / "absent.json")]) == 2


NCCL_ENV = {"LD_LIBRARY_PATH": "/opt/sparkfleet/nccl/2.28.9-sm121/lib",
            "VLLM_NCCL_SO_PATH": "/opt/sparkfleet/nccl/2.28.9-sm121/lib/libnccl.so.2"}


@pytest.mark.parametrize("process_env,kind,ours", [
    ({"LD_LIBRARY_PATH": "/opt/sparkfleet/nccl/2.28.9-sm121/lib:/usr/lib",
      "VLLM_NCCL_SO_PATH": "/opt/sparkfleet/nccl/2.28.9-sm121/lib/libnccl.so.2"}, "vllm", True),
    ({"LD_LIBRARY_PATH": "/opt/sparkfleet/nccl/2.28.9-sm121/lib"}, "vllm", False),  # pynccl would load torch's
    ({"LD_LIBRARY_PATH": "/opt/sparkfleet/nccl/2.28.9-sm121/lib"}, "ray", True),
    ({"LD_LIBRARY_PATH": "/usr/lib:/opt/sparkfleet/nccl/2.28.9-sm121/lib"}, "ray", False),
    ({}, "ray", False),
])
def test_nccl_is_ours(process_env, kind, ours):
    assert probe.nccl_is_ours(process_env, NCCL_ENV, kind) is ours


PRELOADING_ENV = dict(NCCL_ENV, LD_PRELOAD="/opt/sparkfleet/nccl/2.28.9-sm121/lib/libnccl.so.2")


@pytest.mark.parametrize("process_env,ours", [
    (dict(PRELOADING_ENV), True),
    # LD_LIBRARY_PATH alone: a CUDA torch binds to the pip NCCL its DT_RPATH names.
    ({k: v for k, v in PRELOADING_ENV.items() if k != "LD_PRELOAD"}, False),
    (dict(PRELOADING_ENV, LD_PRELOAD="/usr/lib/libjemalloc.so.2"), False),
    (dict(PRELOADING_ENV, LD_PRELOAD="/usr/lib/libjemalloc.so.2:/opt/sparkfleet/nccl/2.28.9-sm121/lib/libnccl.so.2"),
     True),
])
def test_nccl_is_ours_needs_the_preload_the_file_sets(process_env, ours):
    assert probe.nccl_is_ours(process_env, PRELOADING_ENV, "vllm") is ours


def test_nccl_check_reads_the_main_pid_environ(tmp_path):
    (tmp_path / "nccl.env").write_text("# managed\nNCCL_HOME=/opt/sparkfleet/nccl/2.28.9-sm121\n"
                                       "LD_LIBRARY_PATH=/opt/sparkfleet/nccl/2.28.9-sm121/lib\n")
    for pid, path in (("101", "/opt/sparkfleet/nccl/2.28.9-sm121/lib"), ("202", "/opt/sparkfleet/venv/lib")):
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "environ").write_bytes(b"PATH=/usr/bin\0LD_LIBRARY_PATH=" + path.encode() + b"\0")

    def runner(argv, timeout, env=None):
        pid = {"sparkfleet-ray-head.service": "101", "sparkfleet-ray-old.service": "202"}.get(argv[-1], "0")
        return 0, "ActiveState=active\nNRestarts=0\nMainPID=%s\n" % pid

    config = {"nccl_env_file": str(tmp_path / "nccl.env"), "proc_root": str(tmp_path),
              "units": [{"name": "sparkfleet-ray-head", "kind": "ray"}, {"name": "sparkfleet-ray-old", "kind": "ray"},
                        {"name": "sparkfleet-stopped", "kind": "ray"}]}
    samples, failures = probe.collect(config, runner=runner)
    nccl = [s for s in samples if s[0] == "sparkfleet_unit_nccl_ours"]
    assert nccl == [("sparkfleet_unit_nccl_ours", {"unit": "sparkfleet-ray-head", "kind": "ray"}, True),
                    ("sparkfleet_unit_nccl_ours", {"unit": "sparkfleet-ray-old", "kind": "ray"}, False)]
    assert failures == ["unit sparkfleet-ray-old did not start with the NCCL of %s first" % (tmp_path / "nccl.env")]


def _sweep():
    """The file sparkfleet.gb10.fleet_benchmark keeps, as its summary filter writes it."""
    from ansible_collections.sparkfleet.gb10.plugins.module_utils import benchmark
    qwen = {"name": "qwen3", "model": "Qwen/Qwen3-235B-A22B-GPTQ-Int4", "checkpoint_format": "gptq",
            "active_params_b": 22, "tensor_parallel_size": 2}
    points = [{"concurrency": c, "num_prompts": 8, "completed": 8, "failed": 0, "output_tok_s": v, "request_s": 0.1,
               "error": None, "ttft_p99_ms": 250.0, "itl_p99_ms": 60.0} for c, v in ((1, 17.0), (4, 36.4))]
    return {"generated": "2026-11-27T08:30:00Z",
            "models": [benchmark.summary("qwen3", qwen, points, compare=True),
                       benchmark.summary("tiny", {"name": "tiny", "model": "/m"}, points[:1], compare=False)]}


def test_the_last_benchmark_sweep_becomes_metrics(tmp_path):
    bench = tmp_path / "benchmark.json"
    bench.write_text(json.dumps(_sweep()))
    out = tmp_path / "textfile"
    out.mkdir()
    (tmp_path / "probe.json").write_text(json.dumps({"textfile_dir": str(out), "benchmark_file": str(bench)}))
    assert probe.main(["--config", str(tmp_path / "probe.json")]) == 0
    samples = parse_exposition((out / "sparkfleet_health.prom").read_text())
    assert _value(samples, "sparkfleet_benchmark_output_tokens_per_second", model="qwen3", concurrency="4") == 36.4
    assert _value(samples, "sparkfleet_benchmark_ttft_p99_seconds", model="qwen3", concurrency="1") == 0.25
    assert _value(samples, "sparkfleet_benchmark_itl_p99_seconds", model="qwen3", concurrency="1") == 0.06
    assert 0.3 < _value(samples, "sparkfleet_benchmark_roofline_share", model="qwen3", concurrency="1") < 0.45
    assert _value(samples, "sparkfleet_benchmark_timestamp_seconds", model="qwen3", form="spark") == 1795768200
    assert _value(samples, "sparkfleet_benchmark_timestamp_seconds", model="tiny", form="simulated") == 1795768200
    # Simulated figures are exported, never read against the roofline.
    assert ("sparkfleet_benchmark_roofline_share", frozenset({"model": "tiny", "concurrency": "1"}.items())) \
        not in samples


def test_an_unreadable_sweep_is_a_failed_check_not_a_crash(tmp_path, capsys):
    bench = tmp_path / "benchmark.json"
    bench.write_text("{not json")
    out = tmp_path / "textfile"
    out.mkdir()
    (tmp_path / "probe.json").write_text(json.dumps({"textfile_dir": str(out), "benchmark_file": str(bench)}))
    assert probe.main(["--config", str(tmp_path / "probe.json")]) == 0
    assert "FAILED benchmark: cannot read" in capsys.readouterr().out


def _hold_run(tmp_path, record):
    """The probe over os_update's do-not-reboot record (None: no record file)."""
    hold = tmp_path / "do-not-reboot.json"
    if record is not None:
        hold.write_text(record if isinstance(record, str) else json.dumps(record))
    out = tmp_path / "textfile"
    out.mkdir()
    (tmp_path / "probe.json").write_text(json.dumps({"textfile_dir": str(out), "reboot_hold_file": str(hold)}))
    rc = probe.main(["--config", str(tmp_path / "probe.json")])
    return rc, parse_exposition((out / "sparkfleet_health.prom").read_text())


def test_the_record_that_says_not_to_reboot_is_exported_with_its_kernels(tmp_path):
    """What os_update's rescue writes after a refused proof (roles/os_update/tasks/stopped.yml)."""
    rc, samples = _hold_run(tmp_path, {"reason": "the next boot's kernel 6.17.0-1020-nvidia has no NVIDIA module",
                                       "step": "proof", "running_kernel": "6.17.0-1016-nvidia",
                                       "refused_kernel": "6.17.0-1020-nvidia", "next_boot": "6.17.0-1016-nvidia",
                                       "next_boot_once": True})
    assert rc == 0
    assert _value(samples, "sparkfleet_do_not_reboot", step="proof", running_kernel="6.17.0-1016-nvidia",
                  refused_kernel="6.17.0-1020-nvidia") == 1


def test_no_record_is_zero_and_an_unreadable_one_still_says_not_to_reboot(tmp_path, capsys):
    (tmp_path / "none").mkdir()
    (tmp_path / "broken").mkdir()
    rc, samples = _hold_run(tmp_path / "none", None)
    assert rc == 0 and _value(samples, "sparkfleet_do_not_reboot") == 0
    rc, samples = _hold_run(tmp_path / "broken", "{not json")
    assert _value(samples, "sparkfleet_do_not_reboot", step="unknown", running_kernel="unknown",
                  refused_kernel="unknown") == 1
    assert "FAILED reboot hold: cannot read" in capsys.readouterr().out


# Where the role installs grub_boot.py beside the probe (fleet_health_lib_dir): here, the collection's own file.
LIB_DIR = os.path.join(os.path.dirname(PROBE), "..", "..", "..", "plugins", "module_utils")


def _grub(tmp_path, releases, newest_first=True):
    """GRUB's files as update-grub leaves them (the shape of tests/fixtures/grub/grub.cfg, shortened)."""
    ordered = sorted(releases, key=lambda r: [int(n) for n in re.findall(r"\d+", r)], reverse=newest_first)
    (tmp_path / "default").mkdir(exist_ok=True)
    (tmp_path / "default" / "grub").write_text('GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\n')
    (tmp_path / "boot" / "grub").mkdir(exist_ok=True)
    (tmp_path / "boot" / "grub" / "grub.cfg").write_text("".join(
        "menuentry 'Ubuntu, with Linux %s' --class ubuntu {\n\tlinux\t/boot/vmlinuz-%s root=UUID=x ro quiet\n}\n"
        % (r, r) for r in ordered))


def _kernel_tree(tmp_path, running, next_boot):
    boot = tmp_path / "boot"
    boot.mkdir()
    for release in {running, next_boot} - {None}:
        (boot / ("vmlinuz-" + release)).write_text("")
    if next_boot:
        os.symlink("vmlinuz-" + next_boot, str(boot / "vmlinuz"))
        _grub(tmp_path, {running, next_boot})
    (tmp_path / "osrelease").write_text(running + "\n")
    # what the role renders into probe.json (vars/main.yml), from the rule book
    return {"boot_dir": str(boot), "modinfo": "/usr/sbin/modinfo", "proc_osrelease": str(tmp_path / "osrelease"),
            "grub_dir": "", "etc_default": str(tmp_path / "default"), "lib_dir": LIB_DIR,
            "module": "nvidia", "branch": rulebook.setting("driver_branch"),
            "module_package": rulebook.setting("nvidia_kernel_module_package"),
            "headers_package": rulebook.setting("kernel_headers_package"),
            "known_bad_kernels": rulebook.setting("known_bad_kernels")}


def _modinfo(modules):
    """A runner answering `modinfo -k <kernel> -F version nvidia` from {kernel: version} as kmod does (rc 1 and
    an error on stderr for a kernel without the module)."""
    calls = []

    def runner(argv, timeout, env=None):
        calls.append(argv)
        assert argv[0] == "/usr/sbin/modinfo" and argv[1] == "-k" and argv[3:] == ["-F", "version", "nvidia"]
        if argv[2] in modules:
            return 0, modules[argv[2]] + "\n"
        return 1, "modinfo: ERROR: Module nvidia not found.\n"
    return runner, calls


def _collect(tmp_path, running, next_boot, modules, **kernel):
    """The probe's (samples, failures, modinfo calls) on a host running ``running`` whose next boot starts
    ``next_boot``, with the NVIDIA modules ``modules`` ({kernel: version}); ``kernel`` changes what the role
    rendered into the probe's configuration."""
    runner, calls = _modinfo(modules)
    samples, failures = probe.collect({"kernel": dict(_kernel_tree(tmp_path, running, next_boot), **kernel)},
                                      runner=runner)
    return samples, failures, calls


def test_the_next_boots_kernel_with_its_module_keeps_the_gpu(tmp_path):
    samples, failures, calls = _collect(tmp_path, "6.17.0-1014-nvidia", "6.17.0-1016-nvidia",
                                        {"6.17.0-1014-nvidia": "580.95.05", "6.17.0-1016-nvidia": "580.95.05"})
    assert calls[0][2] == "6.17.0-1016-nvidia"  # the next boot's kernel, not the running one
    assert ("sparkfleet_next_boot_nvidia_module",
            {"kernel": "6.17.0-1016-nvidia", "branch": "580", "version": "580.95.05"}, True) in samples
    assert ("sparkfleet_kernel_info", {"running": "6.17.0-1014-nvidia", "next_boot": "6.17.0-1016-nvidia"}, 1) in samples
    assert failures == []


def test_an_update_that_brought_a_kernel_without_the_module_is_caught_before_the_reboot(tmp_path):
    samples, failures, _calls = _collect(tmp_path, "6.17.0-1014-nvidia", "6.17.0-1016-nvidia",
                                         {"6.17.0-1014-nvidia": "580.95.05"})
    assert ("sparkfleet_next_boot_nvidia_module",
            {"kernel": "6.17.0-1016-nvidia", "branch": "580", "version": "none"}, False) in samples
    assert len(failures) == 1 and "6.17.0-1016-nvidia has no NVIDIA kernel module" in failures[0]
    assert ("Install linux-modules-nvidia-580-open-6.17.0-1016-nvidia (DGX OS), or with the DKMS driver "
            "linux-headers-6.17.0-1016-nvidia (or boot the running kernel 6.17.0-1014-nvidia)") in failures[0]
    assert ("sparkfleet_next_boot_kernel_known_bad", {"kernel": "6.17.0-1016-nvidia"}, False) in samples


def test_the_package_names_come_from_the_probes_configuration(tmp_path):
    """The probe names what the role rendered from the rule book, not a name of its own."""
    _samples, failures, _calls = _collect(tmp_path, "6.17.0-1014-nvidia", "6.17.0-1016-nvidia", {},
                                          module_package="nvidia-kmod-{branch}-for-{kernel}", headers_package="")
    assert "Install nvidia-kmod-580-for-6.17.0-1016-nvidia (or boot" in failures[0]
    assert "linux-modules-nvidia" not in failures[0]


def test_a_known_bad_next_kernel_is_flagged_with_the_rule_books_why_and_fix(tmp_path):
    bad = rulebook.setting("known_bad_kernels")[0]
    samples, failures, _calls = _collect(tmp_path, "6.17.0-1032-nvidia", bad["release"],
                                         {"6.17.0-1032-nvidia": "580.142", bad["release"]: "580.142"})
    assert ("sparkfleet_next_boot_kernel_known_bad", {"kernel": bad["release"]}, True) in samples
    assert ("sparkfleet_next_boot_nvidia_module",
            {"kernel": bad["release"], "branch": "580", "version": "580.142"}, True) in samples
    assert failures == ["kernel: the next boot's kernel %s is known bad on Sparks: %s (%s). Fix: %s"
                        % (bad["release"], bad["why"], ", ".join(bad["sources"]), bad["fix"])]


def test_a_module_of_another_branch_is_no_gpu_either(tmp_path):
    samples, failures, _calls = _collect(tmp_path, "6.17.0-1014-nvidia", "6.17.0-1016-nvidia",
                                         {"6.17.0-1016-nvidia": "590.44.01"})
    assert ("sparkfleet_next_boot_nvidia_module",
            {"kernel": "6.17.0-1016-nvidia", "branch": "580", "version": "590.44.01"}, False) in samples
    assert "not of the 580 branch" in failures[0]


def test_without_grub_cfg_the_next_boot_is_the_running_kernel(tmp_path):
    _samples, failures, calls = _collect(tmp_path, "6.17.0-1014-nvidia", None, {"6.17.0-1014-nvidia": "580.95.05"})
    assert calls[0][2] == "6.17.0-1014-nvidia" and failures == []


@pytest.mark.parametrize("releases, newest_first, expected", [
    (["6.17.0-1014-nvidia"], True, "6.17.0-1014-nvidia"),
    (["6.17.0-1014-nvidia", "6.17.0-1016-nvidia"], True, "6.17.0-1016-nvidia"),
    (["6.17.0-1032-nvidia", "6.17.0-1100-nvidia"], True, "6.17.0-1100-nvidia"),
    # grub.cfg written another way (stale, or by hand): GRUB boots its first entry, whatever the versions
    (["6.17.0-1014-nvidia", "6.17.0-1016-nvidia"], False, "6.17.0-1014-nvidia"),
], ids=["one", "newer", "by-number", "first-entry"])
def test_the_probe_and_the_os_update_plan_agree_on_the_next_boots_kernel(tmp_path, releases, newest_first, expected):
    """One definition of the next boot's kernel (grub_boot.next_boot, installed beside the probe); the probe and
    the OS update's proof answer the same on the same tree."""
    (tmp_path / "boot").mkdir()
    for release in releases:
        (tmp_path / "boot" / ("vmlinuz-" + release)).write_text("")
    _grub(tmp_path, releases, newest_first)
    running = "6.17.0-1014-nvidia"
    kernel = {"boot_dir": str(tmp_path / "boot"), "etc_default": str(tmp_path / "default"), "lib_dir": LIB_DIR}
    params = {"boot_dir": kernel["boot_dir"], "grub_dir": "", "etc_default": kernel["etc_default"]}
    assert probe.next_boot_kernel(kernel, running) == expected
    assert os_update_plan.next_boot(params, running, planned=False)["release"] == expected


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_probe_and_the_os_update_plan_agree_on_the_recorded_sparks(variant):
    boot = os.path.join(GB10, variant, "boot")
    with open(os.path.join(GB10, variant, "proc", "sys", "kernel", "osrelease")) as handle:
        running = handle.read().strip()
    kernel = {"boot_dir": boot, "etc_default": os.path.join(GB10, variant, "etc", "default"), "lib_dir": LIB_DIR}
    params = {"boot_dir": boot, "grub_dir": "", "etc_default": kernel["etc_default"]}
    assert probe.next_boot_kernel(kernel, running) == os_update_plan.next_boot(params, running, planned=False)["release"]
