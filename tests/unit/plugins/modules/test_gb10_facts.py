# -*- coding: utf-8 -*-
import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import dpkg
from ansible_collections.sparkfleet.gb10.plugins.modules import gb10_facts as m
from gb10_fixture_params import params_for as fixture_params  # tests/unit/gb10_fixture_params.py

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "gb10"))
VARIANTS = sorted(d for d in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, d)))
REPO = os.path.abspath(os.path.join(FIXTURES, "..", "..", ".."))


def run(argv):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env={"PATH": os.environ["PATH"], "LC_ALL": "C"}, check=False)
    except OSError as exc:
        return 127, "", str(exc)
    return proc.returncode, proc.stdout, proc.stderr


def which(name):
    if os.sep in name:
        return name if os.access(name, os.X_OK) else None
    return shutil.which(name)


def params_for(root, **over):
    over.setdefault("nccl_library_paths", [os.path.join(root, "lib/nccl")])
    return fixture_params(root, **over)


def facts_of(variant, **over):
    return m.gather(params_for(os.path.join(FIXTURES, variant), **over), run, which)


# ---------------------------------------------------------------- parsers

def test_parse_proc_version():
    text = ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.142  Release Build  (dvs)  Thu\n"
            "GCC version:  gcc version 13.3.0\n")
    assert m.parse_proc_version(text) == "580.142"
    assert m.parse_proc_version("garbage") is None
    assert m.parse_proc_version(None) is None


@pytest.mark.parametrize("text,expected", [
    ("NVIDIA GB10, 12.1, 580.142\n", {"name": "NVIDIA GB10", "compute_cap": "12.1", "driver_version": "580.142"}),
    ("NVIDIA GB10, [N/A], 580.142\n", {"name": "NVIDIA GB10", "compute_cap": None, "driver_version": "580.142"}),
    ("", None),
    ("only, two\n", None),
])
def test_parse_smi_query(text, expected):
    assert m.parse_smi_query(text) == expected


def test_parse_nvml_mismatch():
    text = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.142\n"
    assert m.parse_nvml_mismatch(text) == "580.142"
    assert m.parse_nvml_mismatch("") is None


def test_parse_meminfo_bytes():
    info = m.parse_meminfo("MemTotal:       127601212 kB\nMemAvailable:   1 kB\nHugePages_Total:       0\n")
    assert info["MemTotal"] == 127601212 * 1024
    assert info["MemAvailable"] == 1024
    assert info["HugePages_Total"] == 0


def test_parse_nccl_conf():
    settings, lines = m.parse_nccl_conf("# comment\nNCCL_IB_DISABLE=1  # trailing\n\n NCCL_DEBUG = WARN\n")
    assert settings == {"NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "WARN"}
    assert lines[1] == "NCCL_IB_DISABLE=1  # trailing"
    assert m.parse_nccl_conf(None) == ({}, [])


def test_parse_ip_json():
    data = [{"ifname": "enp1s0f1np1", "addr_info": [
        {"family": "inet", "local": "192.168.100.10", "prefixlen": 24},
        {"family": "inet6", "local": "fe80::1", "prefixlen": 64}]},
        {"ifname": "lo", "addr_info": []}]
    assert m.parse_ip_json(json.dumps(data)) == {"enp1s0f1np1": ["192.168.100.10/24"], "lo": []}
    assert m.parse_ip_json("not json") is None
    assert m.parse_ip_json("{}") is None


@pytest.mark.parametrize("text, devs", [
    # recorded on a simulated Spark (docker network), and a host with two default routes
    ('[{"dst":"default","gateway":"10.213.0.1","dev":"eth0","flags":[]}]', ["eth0"]),
    ('[{"dst":"default","gateway":"192.168.1.1","dev":"enP7s7","protocol":"dhcp","metric":100,"flags":[]},'
     '{"dst":"default","gateway":"10.0.0.1","dev":"wlP9s9","metric":600,"flags":[]},'
     '{"dst":"default","gateway":"192.168.1.2","dev":"enP7s7","metric":700,"flags":[]}]', ["enP7s7", "wlP9s9"]),
    ("[]", []),
    ("not json", None),
    ('{"dev": "eth0"}', None),
])
def test_parse_default_routes(text, devs):
    assert m.parse_default_routes(text) == devs


def test_management_is_the_first_default_route_device_and_its_first_address():
    ipv4 = {"enP7s7": ["192.168.1.11/24", "192.168.1.12/24"], "wlP9s9": ["10.0.0.5/24"]}
    assert m.management_of(["enP7s7", "wlP9s9"], ipv4) == {"devs": ["enP7s7", "wlP9s9"], "ipv4": "192.168.1.11"}
    assert m.management_of(["tun0"], ipv4) == {"devs": ["tun0"], "ipv4": None}
    assert m.management_of([], ipv4) == {"devs": [], "ipv4": None}


@pytest.mark.parametrize("gid,ipv4", [
    ("0000:0000:0000:0000:0000:ffff:c0a8:640a", "192.168.100.10"),
    ("0:0:0:0:0:ffff:c0a8:650a", "192.168.101.10"),
    ("fe80:0000:0000:0000:4ebb:47ff:fe2c:0111", None),
    ("0000:0000:0000:0000:0000:0000:0000:0000", None),
    ("", None),
    (None, None),
])
def test_gid_ipv4(gid, ipv4):
    assert m.gid_ipv4(gid) == ipv4


def test_parse_list_elf_sorts_numerically():
    text = "ELF file 1: x.sm_90.cubin\nELF file 2: x.sm_121.cubin\nELF file 3: x.sm_100a.cubin\nELF file 4: x.sm_90.cubin\n"
    assert m.parse_list_elf(text) == ["sm_90", "sm_100a", "sm_121"]


DPKG = os.path.join(FIXTURES, "..", "dpkg", "dpkg-query.txt")


def test_parse_dpkg_query_keeps_installed_and_held_only():
    text = "ii \trsync\t3.2.7-1\nhi \tnvidia-driver-580-open\t580.142-0ubuntu1\nrc \tgone\t1.0\n" \
           "iU \thalf\t2.0\nun \tnever\t\n\ngarbage\n"
    assert dpkg.parse_dpkg_query(text) == ({"rsync": "3.2.7-1", "nvidia-driver-580-open": "580.142-0ubuntu1"},
                                           ["nvidia-driver-580-open"])


def test_packages_from_a_recorded_dpkg_query(tmp_path):
    fake = tmp_path / "dpkg-query"
    fake.write_text("#!/bin/sh\n# the format is module_utils/dpkg.py's\n[ \"$3\" = '%s' ] || exit 2\n"
                    "grep -v '^#' %s\n" % (dpkg.DPKG_QUERY_FORMAT, DPKG))
    fake.chmod(0o755)
    facts = facts_of("nominal", dpkg_query=str(fake))
    assert facts["missing"] == []
    assert facts["packages"]["rsync"].startswith("3.2.7-1")
    assert facts["packages"]["nftables"].startswith("1.0.6-2")
    # held (hi) is installed too: the driver role holds its packages
    assert facts["packages"]["nvidia-driver-580-open"] == "580.142-0ubuntu1"
    assert facts["packages_held"] == ["libnvidia-compute-580", "nvidia-dkms-580-open", "nvidia-driver-580-open",
                                      "nvidia-utils-580"]


def test_cpu_count_is_what_nproc_prints():
    env = dict((k, v) for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_THREAD_LIMIT"))
    nproc = subprocess.run(["nproc"], capture_output=True, text=True, check=True, env=env).stdout.strip()
    assert facts_of("nominal")["cpu_count"] == int(nproc)


def test_a_failing_dpkg_query_is_missing_not_fatal():
    facts = facts_of("nominal", dpkg_query="false")
    assert facts["packages"] is None
    assert [x for x in facts["missing"] if x.startswith("packages: dpkg-query failed (rc=1)")]


def test_state_name():
    assert m.state_name("4: ACTIVE") == "ACTIVE"
    assert m.state_name("ACTIVE\n") == "ACTIVE"
    assert m.state_name(None) is None


# ---------------------------------------------------------------- fixtures

@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_gathers_without_error(variant):
    facts = facts_of(variant)
    json.dumps(facts)  # what the module returns must serialise
    assert set(facts) == {"gpu", "driver", "cuda_version", "memory", "netdevs", "roce", "nccl_conf",
                          "nccl_libraries", "management", "ipv4_addresses", "cpu_count", "packages", "packages_held", "missing",
                          "model_configs"}
    assert facts["memory"]["mem_total_bytes"] == 127601212 * 1024
    assert facts["memory"]["unified"] is True
    assert set(facts["netdevs"]) == {"enp1s0f0np0", "enp1s0f1np1", "enP2p1s0f0np0", "enP2p1s0f1np1"}


def test_nominal():
    facts = facts_of("nominal")
    assert facts["missing"] == []
    assert facts["gpu"] == {"count": 1, "name": "NVIDIA GB10", "compute_capability": "12.1", "sm": "121", "is_gb10": True}
    assert facts["driver"]["nvidia_smi_version"] == facts["driver"]["kernel_module_version"] == "580.142"
    assert facts["driver"]["branch"] == "580"
    assert facts["driver"]["reboot_pending"] is False
    assert facts["driver"]["forbidden_branch"] is False
    assert facts["cuda_version"] == "13.0"
    assert facts["memory"]["nvidia_smi_memory"] == "Not Supported"
    assert facts["management"] == {"devs": ["enP7s7"], "ipv4": "192.168.1.11"}
    assert facts["netdevs"]["enp1s0f1np1"] == {"operstate": "up", "mtu": 9000, "speed_mbps": 200000,
                                               "mac": "4c:bb:47:2c:01:11", "ipv4": ["192.168.100.10/24"]}
    assert facts["netdevs"]["enp1s0f0np0"]["speed_mbps"] is None
    # both halves of the port, each mapped to its netdev
    assert dict((d, v["netdev"]) for d, v in facts["roce"].items()) == {
        "rocep1s0f0": "enp1s0f0np0", "rocep1s0f1": "enp1s0f1np1",
        "roceP2p1s0f0": "enP2p1s0f0np0", "roceP2p1s0f1": "enP2p1s0f1np1"}
    port = facts["roce"]["rocep1s0f1"]["ports"]["1"]
    assert port["state"] == "ACTIVE" and port["active"] and port["link_layer"] == "Ethernet"
    assert {"index": 3, "gid": "0000:0000:0000:0000:0000:ffff:c0a8:640a", "type": "RoCE v2",
            "ndev": "enp1s0f1np1", "ipv4": "192.168.100.10"} in port["gids"]
    assert len(port["gids"]) == 4  # the all-zero slot is skipped
    assert facts["roce"]["rocep1s0f0"]["ports"]["1"]["active"] is False
    assert "NCCL_IB_DISABLE" not in facts["nccl_conf"]["settings"]
    lib = facts["nccl_libraries"][0]
    assert lib["version"] == "2.28.9" and lib["sass_archs"] == ["sm_100", "sm_121"] and lib["has_sm121"] is True


def test_link_down_half():
    roce = facts_of("link_down_half")["roce"]
    assert roce["roceP2p1s0f1"]["ports"]["1"]["active"] is False
    assert roce["rocep1s0f1"]["ports"]["1"]["active"] is True


def test_no_roce():
    facts = facts_of("no_roce")
    assert facts["roce"] is None
    assert any(x.startswith("roce:") for x in facts["missing"])


def test_no_rocev2_ipv4_gid():
    gids = facts_of("no_rocev2_ipv4_gid")["roce"]["rocep1s0f1"]["ports"]["1"]["gids"]
    assert not [g for g in gids if g["type"] == "RoCE v2" and g["ipv4"]]


def test_mtu_1500():
    assert facts_of("mtu_1500")["netdevs"]["enp1s0f1np1"]["mtu"] == 1500


def test_driver_590():
    driver = facts_of("driver_590")["driver"]
    assert driver["branch"] == "590" and driver["forbidden_branch"] is True and driver["reboot_pending"] is False


def test_reboot_pending():
    facts = facts_of("reboot_pending")
    driver = facts["driver"]
    assert driver["nvidia_smi_version"] == "580.142"
    assert driver["kernel_module_version"] == "580.95.05"
    assert driver["reboot_pending"] is True
    assert "version mismatch" in driver["nvidia_smi_error"]
    assert facts["gpu"] is None and facts["cuda_version"] is None
    assert any(x.startswith("gpu:") for x in facts["missing"])


def test_nccl_ib_disabled():
    facts = facts_of("nccl_ib_disabled")
    assert facts["nccl_conf"]["settings"] == {"NCCL_IB_DISABLE": "1"}
    lib = facts["nccl_libraries"][0]
    assert lib["has_sm121"] is False and "sm_121" in lib["reason"] and "sm_120" in lib["sass_archs"]


def test_everything_missing_gives_nulls_and_reasons(tmp_path):
    facts = m.gather(params_for(str(tmp_path), nvidia_smi="nvidia-smi-absent", cuobjdump="cuobjdump-absent",
                                dpkg_query="dpkg-query-absent",
                                ip_command="ip-absent",
                                nccl_library_paths=[str(tmp_path / "none")]), run, which)
    assert facts["gpu"] is None and facts["memory"] is None and facts["netdevs"] is None and facts["roce"] is None
    assert facts["nccl_conf"]["exists"] is False
    assert facts["nccl_libraries"][0]["version"] is None and facts["nccl_libraries"][0]["reason"]
    assert facts["packages"] is None and facts["packages_held"] is None
    assert facts["management"] is None
    keys = {x.split(":", 1)[0] for x in facts["missing"]}
    assert {"gpu", "memory", "netdevs", "roce", "driver.kernel_module_version", "netdevs.*.ipv4",
            "packages", "management"} <= keys


def test_nccl_without_cuobjdump_and_venv_layout(tmp_path):
    lib = tmp_path / "venv" / "lib" / "python3.12" / "site-packages" / "nvidia" / "nccl" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnccl.so.2").write_bytes(b"\0\0NCCL version 2.27.3+cuda12.9\0")
    out = m.inspect_nccl([str(tmp_path / "venv")], None, run)
    assert out == [{"path": str(lib / "libnccl.so.2"), "version": "2.27.3", "sass_archs": None, "has_sm121": None,
                    "reason": "cuobjdump not found; SASS architectures unknown"}]


def test_fixture_tree_is_self_contained():
    for root, dirs, files in os.walk(FIXTURES):
        for name in dirs + files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                assert not os.path.isabs(os.readlink(path)), path


def test_fixtures_are_generated_from_generate_py(tmp_path):
    copy = tmp_path / "gb10"
    shutil.copytree(FIXTURES, str(copy))
    # generate.py takes the real cuobjdump recording from the GPU host's fixtures beside it.
    shutil.copytree(os.path.join(FIXTURES, "..", "gpu"), str(tmp_path / "gpu"))
    subprocess.check_call([sys.executable, str(copy / "generate.py")], stdout=subprocess.DEVNULL)
    diff = subprocess.run(["diff", "-r", "-x", "__pycache__", FIXTURES, str(copy)], capture_output=True, text=True, check=False)
    assert diff.returncode == 0, diff.stdout[:2000]


def test_module_end_to_end_check_mode():
    root = os.path.join(FIXTURES, "nominal")
    args = " ".join("%s=%s" % (k, v) for k, v in params_for(root).items() if k not in ("nccl_library_paths",
                                                                                       "netdev_pattern"))
    proc = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible"), "localhost", "--check", "-o",
                           "-m", "sparkfleet.gb10.gb10_facts", "-a", args],
                          cwd=REPO, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"changed": false' in proc.stdout and '"ACTIVE"' in proc.stdout


# ---------------------------------------------- a real non-GB10 GPU host (tools/gpu-check.sh recordings)

GPU_HOST = os.path.join(FIXTURES, "..", "gpu", "h200-x2")


def _recorded(name):
    with open(os.path.join(GPU_HOST, name)) as handle:
        lines = handle.read().splitlines(True)
    # The header line says how it was recorded; the program printed the rest.
    return "".join(line for line in lines if not line.startswith("# recorded by tools/gpu-check.sh"))


def test_a_real_two_gpu_h200_host_is_read_as_such(tmp_path):
    """gb10_facts runs on GPU hosts that are not Sparks (the GPU check does): facts, not a GB10 guess."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (tmp_path / "query.csv").write_text(_recorded("nvidia-smi-query.csv"))
    (tmp_path / "table.txt").write_text(_recorded("nvidia-smi.txt"))
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n# replays nvidia-smi as recorded on the GPU host\n"
                   "case \"$1\" in --query-gpu=*) cat %s ;; *) cat %s ;; esac\n"
                   % (tmp_path / "query.csv", tmp_path / "table.txt"))
    smi.chmod(0o755)
    proc = tmp_path / "version"
    proc.write_text(_recorded("proc-driver-nvidia-version.txt"))
    facts = m.gather(params_for(os.path.join(FIXTURES, "nominal"), nvidia_smi=str(smi), proc_driver_version=str(proc),
                                nccl_library_paths=[]), run, which)
    assert facts["gpu"] == {"count": 2, "name": "NVIDIA H200", "compute_capability": "9.0", "sm": "90",
                            "is_gb10": False}
    assert facts["driver"]["nvidia_smi_version"] == facts["driver"]["kernel_module_version"] == "580.159.04"
    assert facts["driver"]["reboot_pending"] is False
    assert facts["driver"]["forbidden_branch"] is False
    assert facts["cuda_version"] == "13.0"
    assert facts["memory"]["unified"] is False
    assert facts["memory"]["nvidia_smi_memory"] == "0MiB / 143771MiB"
    assert facts["memory"]["cuda_visible"].startswith("dedicated")


def test_the_gpu_hosts_own_reading_agrees():
    """What gb10_facts reported on that host itself (kept by tools/gpu-check.yml)."""
    with open(os.path.join(GPU_HOST, "gb10_facts-2.28.9-sm121.json")) as handle:
        facts = json.load(handle)
    assert facts["gpu"]["compute_capability"] == "9.0" and facts["gpu"]["is_gb10"] is False
    library = facts["nccl_libraries"][0]
    # Built with nccl_compute_capability "12.1" on that host: sm_121 SASS, checked by the real cuobjdump.
    assert library["has_sm121"] is True and "sm_121" in library["sass_archs"]


@pytest.mark.parametrize("name, archs", [
    ("cuobjdump-list-elf-2.28.9-sm90.txt", ["sm_90", "sm_100"]),
    ("cuobjdump-list-elf-2.28.9-sm121.txt", ["sm_100", "sm_121"]),
])
def test_parse_list_elf_of_real_nccl_builds(name, archs):
    # NCCL 2.28.9 adds sm_100 cubins of its own to any build; the requested SASS must be there too.
    assert m.parse_list_elf(_recorded(name)) == archs


def test_cuda_total_comes_from_the_gpu_gates_record(tmp_path):
    assert facts_of("nominal")["memory"]["cuda_total_bytes"] is None
    record = tmp_path / "gpu-gate.json"
    record.write_text('{"capability": "12.1", "cuda_memory_total": 62000000000, "torch": "2.10.0+cu129"}')
    facts = facts_of("nominal", gpu_gate_file=str(record))
    assert facts["memory"]["cuda_total_bytes"] == 62000000000
    assert facts["memory"]["mem_total_bytes"] > 62000000000
    record.write_text("not json")
    assert facts_of("nominal", gpu_gate_file=str(record))["memory"]["cuda_total_bytes"] is None


def test_model_configs_read_from_each_checkpoint_dir(tmp_path):
    """config.json of each directory given: architectures, model_type and whether it ships config code."""
    plain, remote, broken = tmp_path / "plain", tmp_path / "remote", tmp_path / "broken"
    for d in (plain, remote, broken):
        d.mkdir()
    (plain / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))
    (remote / "config.json").write_text(json.dumps({"architectures": ["XForCausalLM"], "model_type": "x",
                                                    "auto_map": {"AutoConfig": "configuration_x.XConfig"}}))
    (broken / "config.json").write_text("{not json")
    got = m.read_model_configs({"a": str(plain), "b": str(remote), "c": str(broken), "d": str(tmp_path / "none")})
    assert got == {"a": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "remote_config": False},
                   "b": {"architectures": ["XForCausalLM"], "model_type": "x", "remote_config": True}}


def test_checkpoint_dirs_of_a_hosts_entries():
    from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import checkpoint_dirs
    models = [{"name": "a", "model": "Qwen/Qwen3-30B-A3B"},
              {"name": "b", "model": "b", "source": {"type": "hf", "repo": "o/b"}},
              {"name": "c", "model": "/opt/models/c"}, "not an entry", {"model": "/x"}]
    assert checkpoint_dirs(models, "/var/lib/sparkfleet/models/") == {"b": "/var/lib/sparkfleet/models/b",
                                                                      "c": "/opt/models/c"}
    assert checkpoint_dirs("nonsense", "/s") == {}
