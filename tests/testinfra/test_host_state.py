# -*- coding: utf-8 -*-
"""Host state after site.yml, read on each host with testinfra.

Run by molecule/site/verify.yml against the scenario's containers:

    pytest tests/testinfra --hosts=docker://site-spark-1,docker://site-spark-2

Unit names, ports, paths, packages and the MTU come from the collection's role
defaults, the inventory and the rule book (conftest.py), not from this file.
"""

from __future__ import annotations

import os


def _journal(host, unit):
    return host.run("journalctl -u %s -n 30 --no-pager" % unit).stdout


def _units(hostvars, served_models):
    ray = hostvars["ray_head_service_name"] if hostvars.in_group("ray_head") else hostvars["ray_worker_service_name"]
    vllm = [service["unit"] for service in served_models]
    return [ray + ".service"] + [unit + ".service" for unit in vllm] + [hostvars["fleet_health_unit_name"] + ".timer"]


def test_units_enabled_and_active(host, hostvars, served_models):
    """The Ray unit of the host's role, one vLLM unit per model it serves or joins, the health timer."""
    assert served_models, "%s serves no model in the inventory" % hostvars.hostname
    for unit in _units(hostvars, served_models):
        service = host.service(unit)
        assert service.is_enabled, "%s: %s is not enabled\n%s" % (hostvars.hostname, unit, _journal(host, unit))
        assert service.is_running, "%s: %s is not active\n%s" % (hostvars.hostname, unit, _journal(host, unit))


def _listening(host, port):
    return sorted(s for s in host.socket.get_listening_sockets() if s.startswith("tcp://") and s.rsplit(":", 1)[1] == str(port))


def test_api_ports_listen(host, hostvars, api_models):
    """Every endpoint this host serves listens on its port and bind address (model entry's host, default 0.0.0.0)."""
    for service in api_models:
        address = service["model"].get("host", "0.0.0.0")
        assert host.socket("tcp://%s:%s" % (address, service["port"])).is_listening, (
            "%s: %s does not listen on %s:%s (listening there: %s)\n%s"
            % (hostvars.hostname, service["name"], address, service["port"], _listening(host, service["port"]),
               _journal(host, service["unit"])))


def test_ray_head_listens_on_its_fabric_address(host, hostvars, plan):
    """The head's GCS listens (fabric address or all); a worker runs no GCS of its own; a host of no Ray group
    runs no Ray node."""
    cluster = plan["hosts"][hostvars.hostname]["ray_cluster"]
    if cluster is None:
        # In no Ray group: neither Ray unit may run here.
        running = [u for u in (hostvars["ray_head_service_name"], hostvars["ray_worker_service_name"])
                   if host.service(u).is_running]
        assert running == [], "%s is in no Ray group, yet runs %s" % (hostvars.hostname, ", ".join(running))
        return
    gcs = plan["ray"][cluster]["gcs_port"]
    if not hostvars.in_group("ray_head"):
        assert _listening(host, gcs) == [], "%s is a Ray worker but something listens on the GCS port" % hostvars.hostname
        return
    assert host.socket("tcp://%s:%s" % (hostvars["sparkfleet_fabric_address"], gcs)).is_listening or \
        host.socket("tcp://0.0.0.0:%s" % gcs).is_listening, _listening(host, gcs)


def test_node_exporter_listens_on_the_management_address_only(host, hostvars):
    port = hostvars["fleet_health_node_exporter_port"]
    if not hostvars["fleet_health_node_exporter"]:
        # Turned off in the inventory: nothing of ours listens there.
        assert _listening(host, port) == [], "fleet_health_node_exporter is off, yet port %s listens" % port
        return
    default = host.interface.default()
    management = [a for a in default.addresses if ":" not in a]
    assert _listening(host, port) == ["tcp://%s:%s" % (management[0], port)], (default.name, management)
    assert host.service("prometheus-node-exporter").is_running


def _environment_files(host, unit):
    out = host.check_output("systemctl show -p EnvironmentFiles --value %s" % unit)
    # "PATH (ignore_errors=no)" per file, space-separated.
    return [part for part in out.replace("\n", " ").split() if part.startswith("/")]


def test_secrets_and_environment_files(host, hostvars, served_models):
    """What systemd loads into the units as root belongs to root and only root writes it; secrets are 0600."""
    token_files = {hostvars["ray_auth_token_file"]}
    owner = hostvars["ray_user"]
    secrets_dir = hostvars["vllm_service_secrets_dir"]
    seen = []
    for unit in _units(hostvars, served_models)[:-1]:
        for path in _environment_files(host, unit):
            f = host.file(path)
            assert f.exists, "%s: %s's EnvironmentFile %s is missing" % (hostvars.hostname, unit, path)
            assert f.user == "root", "%s: %s is owned by %s" % (hostvars.hostname, path, f.user)
            assert f.mode & 0o022 == 0, "%s: %s is %s: writable by others than root" % (hostvars.hostname, path, oct(f.mode))
            if os.path.dirname(path) == secrets_dir:
                assert f.mode == 0o600, "%s: secret %s is %s, not 0600" % (hostvars.hostname, path, oct(f.mode))
            seen.append(path)
    assert seen, "%s: no unit loads an EnvironmentFile" % hostvars.hostname
    for path in sorted(token_files) + sorted(host.file(secrets_dir).listdir() if host.file(secrets_dir).is_directory else []):
        path = path if path.startswith("/") else os.path.join(secrets_dir, path)
        f = host.file(path)
        assert f.exists, "%s: %s is missing" % (hostvars.hostname, path)
        assert f.mode == 0o600, "%s: %s is %s, not 0600" % (hostvars.hostname, path, oct(f.mode))
        expected = owner if path in token_files else "root"
        assert f.user == expected, "%s: %s is owned by %s, not %s" % (hostvars.hostname, path, f.user, expected)


def test_driver_packages_installed_and_held(host, hostvars):
    """Every package of the branch is installed at a version of the branch, and dpkg holds it."""
    branch = str(hostvars["nvidia_driver_branch"])
    held = set(host.check_output("apt-mark showhold").split())
    for name in hostvars["nvidia_driver_packages"]:
        package = host.package(name)
        assert package.is_installed, "%s: %s is not installed" % (hostvars.hostname, name)
        assert package.version.startswith(branch + "."), "%s: %s is %s" % (hostvars.hostname, name, package.version)
        if hostvars["nvidia_driver_hold"]:
            assert name in held, "%s: %s is not held (held: %s)" % (hostvars.hostname, name, sorted(held))


def test_the_kernel_module_package_of_the_chosen_mechanism_is_held(host, hostvars):
    """The module's package nvidia_driver_kernel_module chose is installed and held with the driver, and the other
    mechanism's is absent: DGX OS's precompiled metapackage without the DKMS driver, or the DKMS driver alone."""
    branch, flavour = str(hostvars["nvidia_driver_branch"]), hostvars["nvidia_driver_kernel_flavour"]
    meta, dkms = "linux-modules-nvidia-%s-open-%s" % (branch, flavour), "nvidia-dkms-%s-open" % branch
    wanted, other = (meta, dkms) if hostvars["nvidia_driver_kernel_module"] == "precompiled" else (dkms, meta)
    assert host.package(wanted).is_installed, "%s: %s is not installed" % (hostvars.hostname, wanted)
    if hostvars["nvidia_driver_hold"]:
        assert wanted in host.check_output("apt-mark showhold").split(), "%s: %s is not held" % (hostvars.hostname, wanted)
    assert not host.package(other).is_installed, "%s: %s is installed" % (hostvars.hostname, other)


def test_fabric_port_mtu_and_address(host, hostvars):
    ifname = hostvars["sparkfleet_fabric_ifname"]
    port = host.interface(ifname)
    assert port.exists, "%s: no interface %s" % (hostvars.hostname, ifname)
    mtu = port.link[0]["mtu"]
    assert mtu == int(hostvars["qsfp_network_mtu"]), "%s: %s has MTU %s" % (hostvars.hostname, ifname, mtu)
    assert hostvars["sparkfleet_fabric_address"] in port.addresses, (hostvars.hostname, ifname, port.addresses)
