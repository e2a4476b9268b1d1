# -*- coding: utf-8 -*-
"""The fabric firewall's plan: ports from the services' own variables, sources, the nft text."""
import shutil
import subprocess

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.fabric_firewall_plan import fabric_firewall_plan
from ansible_collections.sparkfleet.gb10.plugins.filter.fabric_firewall_stale import FilterModule as StaleFilters
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fabric_firewall as fw
from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import fleet_default

ETH0 = {"ifname": "eth0", "addr_info": [
    {"family": "inet", "local": "10.0.0.21", "prefixlen": 24, "scope": "global"},
    {"family": "inet6", "local": "fe80::1", "prefixlen": 64, "scope": "link"}]}
FABRIC = {"ifname": "enp1s0f1np1", "addr_info": [
    {"family": "inet", "local": "192.168.100.11", "prefixlen": 24, "scope": "global"}]}
SECOND = {"ifname": "enP2p1s0f1np1", "addr_info": [
    {"family": "inet", "local": "192.168.101.11", "prefixlen": 24, "scope": "global"}]}
BARE = {"ifname": "enp1s0f0np0", "addr_info": []}
LO = {"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host"}]}
ROUTES = [{"dst": "default", "gateway": "10.0.0.1", "dev": "eth0"}]
TP = {"name": "tp", "model": "m", "port": 8000, "nodes": ["s1", "s2"]}


def data(**over):
    base = {"host": "s1", "groups": ["sparks", "ray_head"], "links": [LO, ETH0, FABRIC, SECOND, BARE],
            "routes": ROUTES, "api_sources": [], "models": [TP]}
    base.update(over)
    return base


def internal(plan):
    return dict((why, (low, high)) for low, high, why in plan["internal"])


def head_defaults():
    return fw.load_role_default("ray", "ray_head_ports")


def test_ray_head_ports_come_from_the_role_defaults():
    ports = head_defaults()
    plan = fabric_firewall_plan(data())
    got = internal(plan)
    for key, port in ports.items():
        if key not in ("min_worker", "max_worker"):
            assert got["ray_head_ports.%s" % key] == (port, port)
    assert got["ray_head_ports.min_worker-max_worker"] == (ports["min_worker"], ports["max_worker"])


@pytest.mark.parametrize("groups, role", [(["ray_head"], "ray_head"), (["ray_workers"], "ray_worker"), ([], None)])
def test_ray_ports_follow_the_hosts_ray_group(groups, role):
    got = internal(fabric_firewall_plan(data(groups=groups)))
    ray = [w for w in got if w.startswith("ray_")]
    if role is None:
        assert ray == []
    else:
        assert ray and all(w.startswith(role + "_ports.") for w in ray)


def test_inventory_override_of_ray_ports_wins():
    whole = dict(head_defaults(), gcs=7000, min_worker=30000, max_worker=30010)
    got = internal(fabric_firewall_plan(data(ray_head_ports=whole)))
    assert got["ray_head_ports.gcs"] == (7000, 7000)
    assert got["ray_head_ports.min_worker-max_worker"] == (30000, 30010)
    assert got["ray_head_ports.node_manager"] == (head_defaults()["node_manager"],) * 2


def test_inventory_ray_ports_are_merged_over_the_default_key_by_key():
    """The inventory's map names only the ports it moves; the others keep the role's default, as the roles, the
    fleet plan and preflight read it (fleet_plan.ray_ports)."""
    got = internal(fabric_firewall_plan(data(ray_head_ports={"gcs": 7000})))
    assert got["ray_head_ports.gcs"] == (7000, 7000)
    assert got["ray_head_ports.node_manager"] == (head_defaults()["node_manager"],) * 2
    assert got["ray_head_ports.min_worker-max_worker"] == (head_defaults()["min_worker"], head_defaults()["max_worker"])


@pytest.mark.parametrize("model, host, master, api", [
    (TP, "s1", 29501, [8000]),                                    # head of a 2-node mp model: API + rendezvous
    (TP, "s2", 29501, []),                                        # follower: rendezvous, no API
    (dict(TP, master_port=29600, port=9000), "s1", 29600, [9000]),
    (dict(TP, executor="ray"), "s1", None, [8000]),               # ray executor: no mp rendezvous
    ({"name": "one", "model": "m"}, "s1", None, [8000]),          # single node, the schema's default port
    ({"name": "other", "model": "m", "nodes": ["s3"]}, "s1", None, []),
])
def test_model_ports(model, host, master, api):
    plan = fabric_firewall_plan(data(host=host, models=[model], groups=[]))
    got = internal(plan)
    masters = [v for k, v in got.items() if k.endswith("master_port")]
    assert masters == ([(master, master)] if master else [])
    assert [a[0] for a in plan["api"]] == api


def test_rsync_port_only_where_a_model_has_a_source():
    assert "model_store_rsync_port" not in internal(fabric_firewall_plan(data()))
    plan = fabric_firewall_plan(data(models=[dict(TP, source={"type": "dir", "path": "/x"})]))
    default = fw.load_role_default("model_store", "model_store_rsync_port")
    assert internal(plan)["model_store_rsync_port"] == (default, default)
    plan = fabric_firewall_plan(data(models=[dict(TP, source={"type": "dir", "path": "/x"})], rsync_port=8873))
    assert internal(plan)["model_store_rsync_port"] == (8873, 8873)


@pytest.mark.parametrize("model, host, member", [
    (TP, "s2", True),                           # mp follower: its head asks it to drop its page cache
    (dict(TP, executor="ray"), "s2", True),     # ray follower: no vLLM unit of its own, asked all the same
    (TP, "s1", False),                          # the head asks; it listens for no one
    ({"name": "one", "model": "m"}, "s1", False),
])
def test_page_cache_port_only_on_a_member_of_a_multi_node_model(model, host, member):
    port = fleet_default("page_cache_port")
    plan = fabric_firewall_plan(data(host=host, models=[model], groups=[]))
    assert internal(plan).get("vllm_service_page_cache_port") == ((port, port) if member else None)
    if member:
        assert '%d comment "vllm_service_page_cache_port"' % port in plan["ruleset"]
        # vllm_service's variable where the inventory sets it
        moved = fabric_firewall_plan(data(host=host, models=[model], groups=[], page_cache_port=9875))
        assert internal(moved)["vllm_service_page_cache_port"] == (9875, 9875)


def nccl_default(name):
    return fw.load_role_default("nccl", name)


@pytest.mark.parametrize("over", [
    {},                                       # a Ray head serving a 2-node model
    {"groups": [], "models": []},             # a host with nothing else internal: any host may build NCCL
    {"groups": ["ray_workers"], "host": "s2"},
])
def test_nccl_rsync_port_on_every_host_while_built_once(over):
    port = nccl_default("nccl_rsync_port")
    assert nccl_default("nccl_build_once") is True and isinstance(port, int)
    plan = fabric_firewall_plan(data(**over))
    assert internal(plan)["nccl_rsync_port"] == (port, port)
    assert '%d comment "nccl_rsync_port"' % port in plan["ruleset"]


@pytest.mark.parametrize("over, expected", [
    ({"nccl_rsync_port": 9874}, (9874, 9874)),               # the inventory's (the nccl role's variable) wins
    ({"nccl_rsync_port": "9874", "nccl_build_once": True}, (9874, 9874)),
    ({"nccl_build_once": False}, None),                       # every host builds: no daemon, no port
    ({"nccl_build_once": "false", "nccl_rsync_port": 9874}, None),  # an INI inventory's false
])
def test_nccl_rsync_port_follows_the_nccl_variables(over, expected):
    assert internal(fabric_firewall_plan(data(**over))).get("nccl_rsync_port") == expected


def test_nccl_rsync_port_has_its_one_home_in_the_nccl_role(tmp_path):
    """Not a copy of the number: another value in the nccl role's defaults moves the firewall with it."""
    for role, text in (("nccl", "nccl_build_once: true\nnccl_rsync_port: 18874\n"),
                       ("model_store", "model_store_rsync_port: 1873\n")):
        (tmp_path / role / "defaults").mkdir(parents=True)
        (tmp_path / role / "defaults" / "main.yml").write_text(text)
    got = internal(fabric_firewall_plan(data(groups=[], models=[dict(TP, source={"type": "dir", "path": "/x"})]),
                                        roles_dir=str(tmp_path)))
    assert got == {"nccl_rsync_port": (18874, 18874), "model_store_rsync_port": (1873, 1873),
                   "model tp master_port": (29501, 29501)}
    (tmp_path / "nccl" / "defaults" / "main.yml").write_text("nccl_build_once: false\nnccl_rsync_port: 18874\n")
    assert "nccl_rsync_port" not in internal(fabric_firewall_plan(data(groups=[]), roles_dir=str(tmp_path)))


def test_api_on_the_nccl_rsync_port_is_refused():
    port = nccl_default("nccl_rsync_port")
    with pytest.raises(AnsibleFilterError, match="model tp port \\(%d\\) is also internal: nccl_rsync_port" % port):
        fabric_firewall_plan(data(models=[dict(TP, port=port)]))
    assert fabric_firewall_plan(data(models=[dict(TP, port=port)], nccl_build_once=False))["api"][0][0] == port


def test_fabric_interfaces_and_sources_are_found_on_the_host():
    plan = fabric_firewall_plan(data())
    assert plan["interfaces"] == ["enP2p1s0f1np1", "enp1s0f1np1"]
    assert plan["fabric_nets4"] == ["192.168.100.0/24", "192.168.101.0/24"]
    assert plan["fabric_addrs4"] == ["192.168.100.11", "192.168.101.11"]
    assert plan["api_sources4"] == ["10.0.0.0/24"] and plan["api_sources6"] == []
    assert plan["api_sources_derived"] is True


@pytest.mark.parametrize("sources, v4, v6", [
    (["172.16.5.0/24"], ["172.16.5.0/24"], []),
    (["10.1.2.3/16", "2001:db8::/48"], ["10.1.0.0/16"], ["2001:db8::/48"]),
])
def test_inventory_sources(sources, v4, v6):
    plan = fabric_firewall_plan(data(api_sources=sources))
    assert (plan["api_sources4"], plan["api_sources6"], plan["api_sources_derived"]) == (v4, v6, False)


@pytest.mark.parametrize("over, words", [
    ({"api_sources": ["10.0.0.0"]}, "fabric_firewall_api_sources[0]='10.0.0.0': not a network in CIDR form"),
    ({"api_sources": ["10.0.0.300/24"]}, "not a network in CIDR form"),
    ({"api_sources": ["10.0.0.0/33"]}, "not a network in CIDR form"),
    ({"extra_internal_ports": ["90000"]}, "fabric_firewall_extra_internal_ports[0]='90000': ports must be 1-65535"),
    ({"extra_internal_ports": ["ssh"]}, "not a port or a port range"),
    ({"models": [dict(TP, port=20050)]}, "model tp port (20050) is also internal"),
    ({"links": [LO, ETH0]}, "no fabric interface with an address"),
    ({"routes": []}, "no default route"),
    ({"management_devs": []}, "no default route"),
    ({"interfaces": ["enp9s0"]}, "fabric_firewall_interfaces=['enp9s0']: enp9s0 missing"),
    ({"ray_head_ports": [6379]}, "ray_head_ports=[6379]: must be a mapping"),
])
def test_bad_values_name_host_variable_and_value(over, words):
    with pytest.raises(AnsibleFilterError) as err:
        fabric_firewall_plan(data(**over))
    assert str(err.value).startswith("s1: ")
    assert words in str(err.value)


def test_no_fabric_in_check_mode_is_not_ready():
    assert fabric_firewall_plan(data(links=[LO, ETH0], allow_no_fabric=True)) == {"ready": False, "host": "s1"}


def test_ruleset_text():
    plan = fabric_firewall_plan(data(ephemeral="32768\t60999", extra_internal_ports=[6379, "9000-9010"]))
    text = plan["ruleset"]
    assert text.startswith("table inet sparkfleet\ndelete table inet sparkfleet\ntable inet sparkfleet {\n")
    assert 'comment "sparkfleet.gb10 fabric_firewall %s"' % plan["digest"] in text
    assert '6379 comment "extra_internal_ports[0]' not in text  # overlapping entries are merged into one element
    assert "9000-9010 comment" in text
    assert "tcp dport 32768-60999 drop" in text
    assert text.index("iifname @fabric_ifaces ip saddr @fabric_nets4 accept") < text.index("tcp dport @api_ports drop")
    assert text.index("ip daddr @fabric_addrs4 drop") < text.index("ip saddr @api_sources4 accept")
    assert "flush ruleset" not in text


def test_digest_follows_the_content():
    one = fabric_firewall_plan(data())
    assert one["digest"] == fabric_firewall_plan(data())["digest"]
    assert one["digest"] != fabric_firewall_plan(data(models=[dict(TP, port=8001)]))["digest"]


def test_the_live_table_is_stale_unless_it_carries_the_plans_digest():
    """The live table (nft list table) carries the comment of the planned file only when that file was loaded: the
    comment is written once (module_utils fabric_firewall), by the ruleset and read here."""
    stale = StaleFilters().filters()["fabric_firewall_stale"]
    plan = fabric_firewall_plan(data())
    # as nft lists the loaded table: the file's table block, without its create and delete lines
    listed = plan["ruleset"].split("table inet sparkfleet {", 1)[1]
    assert not stale({"rc": 0, "stdout": "table inet sparkfleet {" + listed}, plan)
    # an older plan loaded, a table loaded by hand, no table
    older = fabric_firewall_plan(data(models=[dict(TP, port=8001)]))
    assert stale({"rc": 0, "stdout": "table inet sparkfleet {" + listed}, older)
    assert stale({"rc": 0, "stdout": "table inet sparkfleet {\n\tchain input {\n\t}\n}\n"}, plan)
    assert stale({"rc": 1, "stdout": "table inet sparkfleet {" + listed}, plan)


def _nft_check_works():
    if not shutil.which("nft"):
        return False
    probe = subprocess.run(["nft", "-c", "-f", "-"], input="table inet sparkfleet_probe\n", text=True,
                           capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _nft_check_works(), reason="nft -c needs nftables and CAP_NET_ADMIN")
@pytest.mark.parametrize("over", [
    {},
    {"ephemeral": "32768 60999", "api_sources": ["10.0.0.0/8", "2001:db8::/32"], "extra_internal_ports": ["9000-9010"]},
    {"groups": [], "models": []},
    {"links": [LO, ETH0, FABRIC], "groups": ["ray_workers"]},
])
def test_nft_accepts_the_ruleset(over, tmp_path):
    path = tmp_path / "sparkfleet.nft"
    path.write_text(fabric_firewall_plan(data(**over))["ruleset"])
    result = subprocess.run(["nft", "-c", "-f", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_the_management_devices_from_the_facts_win_over_routes():
    from_routes = fabric_firewall_plan(data())
    from_facts = fabric_firewall_plan(data(routes=[], management_devs=["eth0"]))
    assert from_facts["api_sources4"] == from_routes["api_sources4"] and from_facts["api_sources4"]
    assert from_facts["digest"] == from_routes["digest"]
    # the facts name another device: its networks, not those of the routes
    with pytest.raises(AnsibleFilterError, match="no default route"):
        fabric_firewall_plan(data(management_devs=["wlan9"]))
