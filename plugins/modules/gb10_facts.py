#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
module: gb10_facts
author: sparkfleet.gb10 developers (!UNKNOWN)
short_description: Gather DGX Spark (GB10, SM121) GPU, driver, memory, QSFP/RoCE and NCCL facts
version_added: "0.1.0"
description:
  - Reads, and never changes, what the rest of the collection decides from on a DGX Spark.
  - GPU name and compute capability, driver version from C(nvidia-smi) B(and) from
    C(/proc/driver/nvidia/version) (they differ while a reboot is pending), CUDA version.
  - MemTotal/MemAvailable from C(/proc/meminfo); GB10 memory is unified, C(nvidia-smi) reports no
    separate GPU memory.
  - The QSFP netdevs (link state, MTU, speed, MAC, IPv4 addresses), the RoCE devices, which netdev each
    one is, their port state and the GID table with types and IPv4 addresses, so C(NCCL_IB_GID_INDEX)
    can be computed instead of guessed.
  - The contents of C(/etc/nccl.conf) and, for given paths, the NCCL library found there, its version
    and the SASS architectures in it (C(cuobjdump --list-elf)) when the tool is present.
  - The processors this process may run on (what C(nproc) counts), for C(make -j).
  - The installed Debian packages and their versions (C(dpkg-query)), so install tasks skip C(apt) when
    nothing they need is missing instead of asking apt on every run.
  - Every path and command is a parameter so tests point the module at recorded fixture trees.
    A missing piece gives C(null) plus an entry in C(gb10.missing), never a failure.
extends_documentation_fragment: []
attributes:
  check_mode:
    support: full
    description: Read-only; runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing changes, there is nothing to diff.
  facts:
    support: full
    description: Sets C(ansible_facts.gb10).
options:
  sysfs_net:
    description: Directory listing network devices.
    type: path
    default: /sys/class/net
  sysfs_infiniband:
    description: Directory listing RDMA (RoCE) devices.
    type: path
    default: /sys/class/infiniband
  proc_driver_version:
    description: The running kernel module's version file.
    type: path
    default: /proc/driver/nvidia/version
  gpu_gate_file:
    description:
      - The GPU gate's record (written by the vllm_venv role on a GPU host) of the total memory CUDA reports,
        returned as C(memory.cuda_total_bytes); absent before the gate ran.
    type: path
    default: /var/lib/sparkfleet/gpu-gate.json
  meminfo:
    description: The meminfo file.
    type: path
    default: /proc/meminfo
  nccl_conf:
    description: NCCL's system configuration file.
    type: path
    default: /etc/nccl.conf
  nvidia_smi:
    description: The C(nvidia-smi) command (name looked up in PATH, or a path).
    type: str
    default: nvidia-smi
  cuobjdump:
    description: The C(cuobjdump) command (name looked up in PATH and C(/usr/local/cuda/bin), or a path).
    type: str
    default: cuobjdump
  ip_command:
    description: The C(ip) command used for C(ip -j addr show) (name or path).
    type: str
    default: ip
  dpkg_query:
    description: The C(dpkg-query) command (name or path); its absence leaves C(packages) null.
    type: str
    default: dpkg-query
  nccl_library_paths:
    description:
      - Files, directories, install prefixes or virtualenvs whose C(libnccl.so.*) to inspect.
      - A directory is searched directly, in C(lib/) and in a virtualenv's C(site-packages/nvidia/nccl/lib).
    type: list
    elements: path
    default: []
  model_dirs:
    description:
      - Model entry name to the checkpoint directory this host serves it from; the C(config.json) of each
        that exists is read into C(model_configs), which preflight judges against what the pinned vLLM serves.
    type: dict
    default: {}
  netdev_pattern:
    description: Regular expression matching the QSFP netdev names (both halves of both ports).
    type: str
    default: '^enP?\d*p\d+s0f[01]np[01]$'
notes:
  - Port keys in C(roce.<dev>.ports) are strings (C("1")), as JSON makes them.
"""

EXAMPLES = r"""
- name: Gather GB10 facts
  sparkfleet.gb10.gb10_facts:

- name: Gather, also inspecting the NCCL build and the vLLM virtualenv
  sparkfleet.gb10.gb10_facts:
    nccl_library_paths:
      - /opt/nccl-sm121/lib
      - /opt/vllm/venv

- name: Refuse to go on while a driver reboot is pending
  ansible.builtin.assert:
    that: not ansible_facts.gb10.driver.reboot_pending
    fail_msg: "{{ inventory_hostname }}: driver {{ ansible_facts.gb10.driver.nvidia_smi_version }} is installed but
      {{ ansible_facts.gb10.driver.kernel_module_version }} is loaded; reboot the node."
"""

RETURN = r"""
ansible_facts:
  description: Facts set by the module.
  returned: always
  type: dict
  contains:
    gb10:
      description: Everything gathered; any part that could not be read is null and listed in C(missing).
      returned: always
      type: dict
      contains:
        gpu:
          description: C(count) (GPUs nvidia-smi lists; 1 on a Spark), C(name) and C(compute_capability)
            (C("12.1")) and C(sm) (C("121")) of the first, C(is_gb10).
          type: dict
          sample: {"count": 1, "name": "NVIDIA GB10", "compute_capability": "12.1", "sm": "121", "is_gb10": true}
        model_configs:
          description: Per model entry name whose C(model_dirs) directory has a readable C(config.json), its
            C(architectures), C(model_type) and C(remote_config) (true when an C(auto_map) names C(AutoConfig),
            that is the checkpoint ships its own config code).
          type: dict
          sample: {"qwen3-30b": {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
                   "remote_config": false}}
        driver:
          description:
            - C(nvidia_smi_version) (user space, also read from NVML's mismatch message), C(kernel_module_version)
              (from /proc), C(branch), C(kernel_module_branch), C(reboot_pending) (versions differ; null when one
              is unknown), C(forbidden_branch) (per the rule book), C(nvidia_smi_error).
          type: dict
        cuda_version:
          description: CUDA version nvidia-smi reports.
          type: str
          sample: "13.0"
        memory:
          description:
            - C(mem_total_bytes), C(mem_available_bytes), C(cuda_total_bytes) (what CUDA reported to the GPU gate, or
              null), C(unified), C(nvidia_smi_memory), C(cuda_visible).
            - C(unified) is true on GB10 (nvidia-smi reports no memory of its own); false on a GPU that reports
              dedicated memory, where MemTotal is host memory only.
          type: dict
        netdevs:
          description: QSFP netdevs by name, each C(operstate), C(mtu), C(speed_mbps), C(mac), C(ipv4) (list of CIDR).
          type: dict
          sample: {"enp1s0f1np1": {"operstate": "up", "mtu": 9000, "speed_mbps": 200000,
                   "mac": "4c:bb:47:2c:01:11", "ipv4": ["192.168.100.10/24"]}}
        roce:
          description:
            - RoCE devices by name, each C(netdev) and C(ports) by port number (string); each port has C(state),
              C(phys_state), C(link_layer), C(active) and C(gids), a list of C(index), C(gid), C(type), C(ndev), C(ipv4).
          type: dict
        nccl_conf:
          description: C(path), C(exists), C(settings) (name to value), C(lines) (raw lines).
          type: dict
        nccl_libraries:
          description: One entry per library found, C(path), C(version), C(sass_archs), C(has_sm121), C(reason).
          type: list
          elements: dict
        management:
          description:
            - The management network, the one the fabric roles never touch - C(devs), the devices that carry a
              default route (C(ip -j route show default)), and C(ipv4), the first IPv4 address of the first of
              them (no prefix; null when it has none).
            - Read here once for the fabric's preflight, the firewall and the health exporter; null when C(ip)
              is missing or fails.
          type: dict
          sample: {"devs": ["enP7s7"], "ipv4": "192.168.1.11"}
        ipv4_addresses:
          description:
            - Every IPv4 address of the host, on any interface, without its prefix (C(ip -j addr show)); null when
              C(ip) is missing or fails. Preflight checks an API's bind address against it.
          type: list
          elements: str
          sample: ["127.0.0.1", "192.168.1.11", "192.168.100.10"]
        cpu_count:
          description: Processors available to this process (C(nproc)), for C(make -j).
          type: int
          sample: 20
        packages:
          description:
            - Installed Debian packages, name to version (status C(installed), held or not); null without C(dpkg-query).
            - Read once per run; a package installed later in the run is not in it, so a stale answer only
              means one more C(apt) call, never a skipped install.
          type: dict
          sample: {"rsync": "3.2.7-1", "nftables": "1.0.9-1"}
        packages_held:
          description: The installed packages on hold (C(apt-mark hold)), sorted; null without C(dpkg-query).
          type: list
          elements: str
          sample: ["nvidia-driver-580-open"]
        missing:
          description: One line per part that could not be read, C(<key>) then a colon and the reason.
          type: list
          elements: str
"""

import glob
import json
import mmap
import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.gb10.plugins.module_utils import dpkg, rulebook
from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import fleet_default

PROC_VERSION_RE = re.compile(r"NVRM version:.*?\s(\d+\.\d+(?:\.\d+)?)\s")
NVML_MISMATCH_RE = re.compile(r"NVML library version:\s*(\d+\.\d+(?:\.\d+)?)")
CUDA_RE = re.compile(r"CUDA Version:\s*(\d+\.\d+)")
SMI_DRIVER_RE = re.compile(r"Driver Version:\s*(\d+\.\d+(?:\.\d+)?)")
SASS_RE = re.compile(r"\b(sm_\d+[af]?)\b")
NCCL_FILE_VERSION_RE = re.compile(r"libnccl\.so\.(\d+\.\d+\.\d+)$")
NCCL_BIN_VERSION_RE = re.compile(rb"NCCL version (\d+\.\d+\.\d+)")
QUERY_FIELDS = ("name", "compute_cap", "driver_version")


def gather_packages(dpkg_query, run, missing):
    if not dpkg_query:
        missing.append("packages: dpkg-query not found")
        return None, None
    rc, out, err = run(dpkg.query_argv(dpkg_query))
    if rc != 0:
        missing.append("packages: dpkg-query failed (rc=%s): %s" % (rc, (err or "").strip()[:200]))
        return None, None
    return dpkg.parse_dpkg_query(out)


def cpu_count():
    """What nproc prints: the processors of this process's affinity mask."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def read_text(path):
    """Return (text, None) or (None, reason)."""
    try:
        with open(path, "r", errors="replace") as handle:
            return handle.read(), None
    except (IOError, OSError) as exc:
        return None, "%s: %s" % (path, getattr(exc, "strerror", None) or exc)


def read_value(path):
    text, _reason = read_text(path)
    return None if text is None else text.strip()


def to_int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def parse_proc_version(text):
    match = PROC_VERSION_RE.search(text or "")
    return match.group(1) if match else None


def parse_smi_query(text):
    """'NVIDIA GB10, 12.1, 580.142' -> dict of QUERY_FIELDS (None for [N/A] or missing)."""
    line = (text or "").strip().splitlines()
    if not line:
        return None
    parts = [p.strip() for p in line[0].split(",")]
    if len(parts) != len(QUERY_FIELDS):
        return None
    return dict((k, None if v in ("", "[N/A]", "N/A", "[Not Supported]") else v) for k, v in zip(QUERY_FIELDS, parts))


def parse_nvml_mismatch(text):
    match = NVML_MISMATCH_RE.search(text or "")
    return match.group(1) if match else None


def parse_cuda_version(text):
    match = CUDA_RE.search(text or "")
    return match.group(1) if match else None


def parse_smi_memory(text):
    """The Memory-Usage cell of GB10's nvidia-smi table ('Not Supported')."""
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) >= 4 and re.match(r"^N/A\s+\d+C", cells[1] or ""):
            return cells[2] or None
    return None


def parse_meminfo(text):
    values = {}
    for line in (text or "").splitlines():
        match = re.match(r"^(\w+):\s+(\d+)(?:\s+kB)?", line)
        if match:
            values[match.group(1)] = int(match.group(2)) * (1024 if line.rstrip().endswith("kB") else 1)
    return values


def read_cuda_total(path):
    """The total memory CUDA reported, from the GPU gate's record (JSON); None when absent or unreadable."""
    text, _reason = read_text(path)
    try:
        value = json.loads(text).get("cuda_memory_total") if text else None
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and value > 0 else None


def parse_nccl_conf(text):
    """/etc/nccl.conf: KEY=VALUE lines, '#' comments. Returns (settings, raw lines)."""
    settings = {}
    lines = (text or "").splitlines()
    for line in lines:
        stripped = line.split("#", 1)[0].strip()
        if "=" in stripped:
            key, value = stripped.split("=", 1)
            settings[key.strip()] = value.strip()
    return settings, lines


def json_list(text):
    """The JSON list ``ip -j`` prints; None when the output is not one."""
    try:
        data = json.loads(text or "")
    except ValueError:
        return None
    return data if isinstance(data, list) else None


def parse_ip_json(text):
    """`ip -j addr show` -> {ifname: ['a.b.c.d/nn', ...]} (IPv4 only)."""
    result = {}
    data = json_list(text)
    if data is None:
        return None
    for link in data:
        if not isinstance(link, dict) or "ifname" not in link:
            continue
        result[link["ifname"]] = [
            "%s/%s" % (a.get("local"), a.get("prefixlen"))
            for a in link.get("addr_info") or [] if a.get("family") == "inet" and a.get("local")
        ]
    return result


def parse_default_routes(text):
    """`ip -j route show default` -> the devices that carry a default route, in order, each once; None when the
    output is not a JSON list."""
    data = json_list(text)
    if data is None:
        return None
    devs = []
    for route in data:
        dev = route.get("dev") if isinstance(route, dict) else None
        if dev and dev not in devs:
            devs.append(dev)
    return devs


def management_of(devs, ipv4_by_name):
    """``{'devs': devs, 'ipv4': first IPv4 address (no prefix) of the first dev}``; ipv4 None without one."""
    first = (ipv4_by_name or {}).get(devs[0], []) if devs else []
    return {"devs": devs, "ipv4": first[0].split("/")[0] if first else None}


def gid_ipv4(gid):
    """IPv4-mapped GID (::ffff:a.b.c.d) -> 'a.b.c.d', else None."""
    if not gid:
        return None
    groups = gid.strip().lower().split(":")
    if len(groups) != 8 or any(g not in ("0", "0000") for g in groups[:5]) or groups[5] != "ffff":
        return None
    try:
        hi, lo = int(groups[6], 16), int(groups[7], 16)
    except ValueError:
        return None
    return "%d.%d.%d.%d" % (hi >> 8, hi & 0xff, lo >> 8, lo & 0xff)


def is_zero_gid(gid):
    return not gid or all(c in "0:" for c in gid.strip())


def state_name(value):
    """'4: ACTIVE' -> 'ACTIVE'."""
    if value is None:
        return None
    return value.split(":", 1)[1].strip() if ":" in value else value.strip()


def parse_list_elf(text):
    return sorted(set(SASS_RE.findall(text or "")), key=lambda a: (int(re.sub(r"\D", "", a)), a))


def gather_netdevs(sysfs_net, pattern, ipv4_by_name):
    """QSFP netdevs under sysfs_net whose names match pattern."""
    try:
        names = sorted(os.listdir(sysfs_net))
    except OSError:
        return None
    regex = re.compile(pattern)
    netdevs = {}
    for name in names:
        if not regex.search(name):
            continue
        base = os.path.join(sysfs_net, name)
        speed = to_int(read_value(os.path.join(base, "speed")))
        netdevs[name] = {
            "operstate": read_value(os.path.join(base, "operstate")),
            "mtu": to_int(read_value(os.path.join(base, "mtu"))),
            "speed_mbps": speed if speed is not None and speed > 0 else None,
            "mac": read_value(os.path.join(base, "address")),
            "ipv4": None if ipv4_by_name is None else list(ipv4_by_name.get(name, [])),
        }
    return netdevs


def gather_port(port_dir):
    gids = []
    gid_dir = os.path.join(port_dir, "gids")
    try:
        indexes = sorted(to_int(i) for i in os.listdir(gid_dir) if i.isdigit())
    except OSError:
        indexes = []
    for index in indexes:
        gid = read_value(os.path.join(gid_dir, str(index)))
        if is_zero_gid(gid):
            continue
        gids.append({
            "index": index,
            "gid": gid,
            "type": read_value(os.path.join(port_dir, "gid_attrs", "types", str(index))),
            "ndev": read_value(os.path.join(port_dir, "gid_attrs", "ndevs", str(index))),
            "ipv4": gid_ipv4(gid),
        })
    state = state_name(read_value(os.path.join(port_dir, "state")))
    return {
        "state": state,
        "phys_state": state_name(read_value(os.path.join(port_dir, "phys_state"))),
        "link_layer": read_value(os.path.join(port_dir, "link_layer")),
        "active": state == "ACTIVE",
        "gids": gids,
    }


def gather_roce(sysfs_infiniband):
    try:
        devices = sorted(os.listdir(sysfs_infiniband))
    except OSError:
        return None
    roce = {}
    for dev in devices:
        base = os.path.join(sysfs_infiniband, dev)
        try:
            nets = sorted(os.listdir(os.path.join(base, "device", "net")))
        except OSError:
            nets = []
        try:
            ports = sorted(p for p in os.listdir(os.path.join(base, "ports")) if p.isdigit())
        except OSError:
            ports = []
        roce[dev] = {
            "netdev": nets[0] if nets else None,
            "ports": dict((p, gather_port(os.path.join(base, "ports", p))) for p in ports),
        }
    return roce


def nccl_candidates(path):
    """Library files a path stands for (file, directory, prefix or virtualenv)."""
    if os.path.isfile(path):
        return [path]
    patterns = [
        os.path.join(path, "libnccl.so.*"),
        os.path.join(path, "lib", "libnccl.so.*"),
        os.path.join(path, "lib", "python3*", "site-packages", "nvidia", "nccl", "lib", "libnccl.so.*"),
        os.path.join(path, "lib", "python3*", "site-packages", "nvidia", "nccl*", "lib", "libnccl.so.*"),
    ]
    found = []
    seen = set()
    for pattern in patterns:
        for candidate in sorted(glob.glob(pattern)):
            if candidate.endswith((".list-elf", ".a")):
                continue
            real = os.path.realpath(candidate)
            if real in seen or not os.path.isfile(real):
                continue
            seen.add(real)
            found.append(candidate)
    return found


def nccl_binary_version(path):
    match = NCCL_FILE_VERSION_RE.search(os.path.basename(os.path.realpath(path)))
    if match:
        return match.group(1)
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                return None
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                found = NCCL_BIN_VERSION_RE.search(data)
                return found.group(1).decode() if found else None
    except (IOError, OSError, ValueError):
        return None


def inspect_nccl(paths, cuobjdump_path, run):
    """One entry per NCCL library behind the given paths (or per path with nothing found)."""
    libraries = []
    for path in paths:
        files = nccl_candidates(path)
        if not files:
            libraries.append({"path": path, "version": None, "sass_archs": None, "has_sm121": None,
                              "reason": "no libnccl.so.* at %s" % path})
            continue
        for lib in files:
            entry = {"path": lib, "version": nccl_binary_version(lib), "sass_archs": None,
                     "has_sm121": None, "reason": None}
            if not cuobjdump_path:
                entry["reason"] = "cuobjdump not found; SASS architectures unknown"
            else:
                rc, out, err = run([cuobjdump_path, "--list-elf", lib])
                if rc != 0:
                    entry["reason"] = "cuobjdump --list-elf failed (rc=%s): %s" % (rc, (err or out).strip()[:200])
                else:
                    entry["sass_archs"] = parse_list_elf(out)
                    entry["has_sm121"] = rulebook.setting("nccl_required_sass") in entry["sass_archs"]
                    if not entry["has_sm121"]:
                        entry["reason"] = "no %s kernels (has %s): build NCCL %s for sm_121" % (
                            rulebook.setting("nccl_required_sass"), ", ".join(entry["sass_archs"]) or "none",
                            rulebook.setting("nccl_version"))
            libraries.append(entry)
    return libraries


def gather_gpu_and_driver(smi_path, proc_version_path, run, missing):
    gpu = None
    cuda_version = None
    smi_memory = None
    driver = {"nvidia_smi_version": None, "kernel_module_version": None, "branch": None,
              "kernel_module_branch": None, "reboot_pending": None, "forbidden_branch": None,
              "nvidia_smi_error": None}

    text, reason = read_text(proc_version_path)
    if text is None:
        missing.append("driver.kernel_module_version: %s" % reason)
    else:
        driver["kernel_module_version"] = parse_proc_version(text)
        if driver["kernel_module_version"] is None:
            missing.append("driver.kernel_module_version: no 'NVRM version' line in %s" % proc_version_path)

    if not smi_path:
        missing.append("gpu: nvidia-smi not found")
    else:
        rc, out, err = run([smi_path, "--query-gpu=%s" % ",".join(QUERY_FIELDS), "--format=csv,noheader"])
        if rc == 0 and parse_smi_query(out):
            query = parse_smi_query(out)
            cap = query["compute_cap"]
            gpu = {
                "count": len([line for line in out.splitlines() if line.strip()]),
                "name": query["name"],
                "compute_capability": cap,
                "sm": cap.replace(".", "") if cap else None,
                "is_gb10": bool(cap == rulebook.setting("gb10_compute_capability")
                                or "GB10" in (query["name"] or "")),
            }
            driver["nvidia_smi_version"] = query["driver_version"]
            rc2, table, _err2 = run([smi_path])
            if rc2 == 0:
                cuda_version = parse_cuda_version(table)
                smi_memory = parse_smi_memory(table)
            if cuda_version is None:
                missing.append("cuda_version: no 'CUDA Version' in nvidia-smi output")
        else:
            message = ((out or "") + (err or "")).strip()
            driver["nvidia_smi_error"] = message[:300] or "rc=%s" % rc
            driver["nvidia_smi_version"] = parse_nvml_mismatch(message)
            missing.append("gpu: nvidia-smi failed (rc=%s): %s" % (rc, message.splitlines()[0] if message else ""))
            missing.append("cuda_version: nvidia-smi failed")

    smi_v, mod_v = driver["nvidia_smi_version"], driver["kernel_module_version"]
    driver["branch"] = rulebook.driver_branch_of(smi_v or mod_v)
    driver["kernel_module_branch"] = rulebook.driver_branch_of(mod_v)
    if smi_v and mod_v:
        driver["reboot_pending"] = smi_v != mod_v
    forbidden = rulebook.setting("driver_forbidden_branches")
    if driver["branch"] or driver["kernel_module_branch"]:
        driver["forbidden_branch"] = driver["branch"] in forbidden or driver["kernel_module_branch"] in forbidden
    return gpu, driver, cuda_version, smi_memory


def read_model_configs(model_dirs):
    """{entry name: {architectures, model_type, remote_config}} of each directory whose config.json reads."""
    out = {}
    for name, directory in sorted((model_dirs or {}).items()):
        text, _reason = read_text(os.path.join(str(directory), "config.json"))
        try:
            config = json.loads(text) if text else None
        except ValueError:
            config = None
        if not isinstance(config, dict):
            continue
        archs = config.get("architectures")
        auto_map = config.get("auto_map")
        out[name] = {"architectures": [str(a) for a in archs] if isinstance(archs, list) else [],
                     "model_type": str(config.get("model_type") or "") or None,
                     "remote_config": isinstance(auto_map, dict) and "AutoConfig" in auto_map}
    return out


def gather(params, run, which):
    """Collect the gb10 facts. ``run(argv) -> (rc, out, err)``; ``which(name) -> path or None``."""
    missing = []
    facts = {}

    gpu, driver, cuda_version, smi_memory = gather_gpu_and_driver(
        which(params["nvidia_smi"]), params["proc_driver_version"], run, missing)
    facts["gpu"] = gpu
    facts["driver"] = driver
    facts["cuda_version"] = cuda_version

    text, reason = read_text(params["meminfo"])
    if text is None:
        facts["memory"] = None
        missing.append("memory: %s" % reason)
    else:
        info = parse_meminfo(text)
        # GB10's nvidia-smi has no memory of its own to report ('Not Supported'); a GPU that reports
        # 'used / total' (a datacenter card, recorded in tests/fixtures/gpu) has dedicated memory.
        dedicated = bool(gpu and not gpu["is_gb10"] and smi_memory and re.search(r"\d+\s*MiB\s*$", smi_memory))
        facts["memory"] = {
            "mem_total_bytes": info.get("MemTotal"),
            # What CUDA itself reported (torch.cuda.mem_get_info), as the GPU gate recorded it; None before it ran.
            "cuda_total_bytes": read_cuda_total(params["gpu_gate_file"]),
            "mem_available_bytes": info.get("MemAvailable"),
            "unified": not dedicated,
            "nvidia_smi_memory": smi_memory,
            "cuda_visible": ("dedicated: the GPU has its own memory (%s per nvidia-smi); MemTotal is host memory"
                             % smi_memory) if dedicated else
                            ("unified: CUDA allocates from the system pool (about MemTotal); nvidia-smi reports "
                             "no separate GPU memory, so size vLLM with gpu-memory-utilization"),
        }

    ip_path = which(params["ip_command"])
    ipv4 = None
    if not ip_path:
        missing.append("netdevs.*.ipv4: ip command not found")
    else:
        rc, out, err = run([ip_path, "-j", "addr", "show"])
        ipv4 = parse_ip_json(out) if rc == 0 else None
        if ipv4 is None:
            missing.append("netdevs.*.ipv4: 'ip -j addr show' failed or gave no JSON (rc=%s)" % rc)
    # Every IPv4 address of the host, on any interface (no prefix): where a service may bind.
    facts["ipv4_addresses"] = None if ipv4 is None else sorted(set(
        address.split("/")[0] for addresses in ipv4.values() for address in addresses))
    facts["management"] = None
    if ip_path:
        rc, out, err = run([ip_path, "-j", "route", "show", "default"])
        devs = parse_default_routes(out) if rc == 0 else None
        if devs is None or ipv4 is None:
            missing.append("management: 'ip -j route show default' failed or gave no JSON (rc=%s)" % rc
                           if devs is None else "management: no addresses ('ip -j addr show' failed)")
        else:
            facts["management"] = management_of(devs, ipv4)
    else:
        missing.append("management: ip command not found")
    facts["netdevs"] = gather_netdevs(params["sysfs_net"], params["netdev_pattern"], ipv4)
    if facts["netdevs"] is None:
        missing.append("netdevs: %s not readable" % params["sysfs_net"])
    elif not facts["netdevs"]:
        missing.append("netdevs: no netdev matches %s" % params["netdev_pattern"])

    facts["roce"] = gather_roce(params["sysfs_infiniband"])
    if facts["roce"] is None:
        missing.append("roce: %s not readable (no RDMA devices)" % params["sysfs_infiniband"])
    elif not facts["roce"]:
        missing.append("roce: no RDMA device under %s" % params["sysfs_infiniband"])

    text, reason = read_text(params["nccl_conf"])
    settings, lines = parse_nccl_conf(text)
    facts["nccl_conf"] = {"path": params["nccl_conf"], "exists": text is not None,
                          "settings": settings, "lines": lines}

    facts["nccl_libraries"] = inspect_nccl(params["nccl_library_paths"], which(params["cuobjdump"]), run)
    facts["model_configs"] = read_model_configs(params["model_dirs"])
    facts["cpu_count"] = cpu_count()
    facts["packages"], facts["packages_held"] = gather_packages(which(params["dpkg_query"]), run, missing)
    facts["missing"] = missing
    return facts


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_net=dict(type="path", default="/sys/class/net"),
            sysfs_infiniband=dict(type="path", default="/sys/class/infiniband"),
            proc_driver_version=dict(type="path", default="/proc/driver/nvidia/version"),
            meminfo=dict(type="path", default="/proc/meminfo"),
            gpu_gate_file=dict(type="path", default=fleet_default("gpu_gate_file")),
            nccl_conf=dict(type="path", default="/etc/nccl.conf"),
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            cuobjdump=dict(type="str", default="cuobjdump"),
            ip_command=dict(type="str", default="ip"),
            dpkg_query=dict(type="str", default="dpkg-query"),
            nccl_library_paths=dict(type="list", elements="path", default=[]),
            model_dirs=dict(type="dict", default={}),
            netdev_pattern=dict(type="str", default=rulebook.setting("qsfp_netdev_pattern")),
        ),
        supports_check_mode=True,
    )
    try:
        re.compile(module.params["netdev_pattern"])
    except re.error as exc:
        module.fail_json(msg="netdev_pattern %r is not a valid regular expression: %s"
                         % (module.params["netdev_pattern"], exc))

    def run(argv):
        try:
            return module.run_command(argv, environ_update={"LC_ALL": "C"})
        except Exception as exc:  # a broken tool must not crash fact gathering
            return 127, "", str(exc)

    def which(name):
        if not name:
            return None
        if os.sep in name:
            return name if os.access(name, os.X_OK) else None
        return module.get_bin_path(name, opt_dirs=["/usr/local/cuda/bin", "/usr/sbin", "/sbin"])

    facts = gather(module.params, run, which)
    module.exit_json(changed=False, ansible_facts={"gb10": facts})


if __name__ == "__main__":
    main()
