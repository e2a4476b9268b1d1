# -*- coding: utf-8 -*-
"""A role's converged state: what differs between its record and the host (plugins/module_utils/role_state.py)."""

from ansible_collections.sparkfleet.gb10.plugins.module_utils import role_state as rs

FILE = {"type": "file", "sha256": "a" * 64, "mode": "0644", "owner": "root", "group": "root"}
UNITS_OUT = ("Id=sparkfleet-ray-head.service\nUnitFileState=enabled\nActiveState=active\n\n"
             "Id=sparkfleet-firewall.service\nUnitFileState=disabled\nActiveState=inactive\n\n"
             "Id=gone.service\nUnitFileState=\nActiveState=inactive\n")
DPKG_OUT = ("nvidia-driver-580-open\t580.95.05-0ubuntu1\thold ok installed\n"
            "linux-image-nvidia\t6.17.0-1014.14\tinstall ok installed\n"
            "removed-pkg\t1.0\tdeinstall ok config-files\n")


def _saved(**over):
    saved = rs.record("ray", rs.digest({"a": 1}), {"/etc/x": FILE},
                      [{"name": "sparkfleet-ray-head.service", "enabled": True, "active": True}],
                      {"nvidia-driver-580-open": {"version": "580.95.05-0ubuntu1", "hold": True}},
                      [{"name": "health", "argv": ["true"]}])
    saved.update(over)
    return saved


def _now(**over):
    now = {"paths": {"/etc/x": dict(FILE)}, "units": rs.parse_units(UNITS_OUT), "packages": rs.parse_packages(DPKG_OUT),
           "checks": {"health": 0}}
    now.update(over)
    return now


def _drift(saved, now, inputs=None):
    return rs.drift(saved, rs.digest(inputs or {"a": 1}), now["paths"], now["units"], now["packages"], now["checks"])


def test_the_digest_is_stable_and_follows_every_input():
    assert rs.digest({"b": [1, 2], "a": "x"}) == rs.digest({"a": "x", "b": [1, 2]})
    assert rs.digest({"a": "x"}) != rs.digest({"a": "y"})


def test_parse_units_and_packages_read_systemctl_and_dpkg_query():
    units = rs.parse_units(UNITS_OUT)
    assert rs.unit_state(units["sparkfleet-ray-head.service"]) == {"enabled": True, "active": True}
    assert rs.unit_state(units["sparkfleet-firewall.service"]) == {"enabled": False, "active": False}
    assert rs.unit_state(units["gone.service"]) == {"enabled": None, "active": None}
    packages = rs.parse_packages(DPKG_OUT)
    assert packages == {"nvidia-driver-580-open": {"version": "580.95.05-0ubuntu1", "hold": True},
                        "linux-image-nvidia": {"version": "6.17.0-1014.14", "hold": False}}


def test_converged_when_the_digest_and_the_host_match():
    assert _drift(_saved(), _now()) == []


def test_no_record_or_other_inputs_is_never_converged():
    assert _drift(None, _now()) == ["no record of a run that went through"]
    assert _drift(_saved(), _now(), inputs={"a": 2}) == ["the role's inputs or code changed since it last ran through"]
    assert _drift(_saved(format=0), _now()) == ["the record is of another format (0)"]


def test_each_hand_change_is_drift():
    changed = dict(FILE, sha256="b" * 64)
    assert _drift(_saved(), _now(paths={"/etc/x": changed})) == ["/etc/x: content changed"]
    assert _drift(_saved(), _now(paths={"/etc/x": dict(FILE, mode="0666")})) == ["/etc/x: mode changed"]
    assert _drift(_saved(), _now(paths={})) == ["/etc/x is absent, was file"]
    stopped = rs.parse_units(UNITS_OUT.replace("ActiveState=active", "ActiveState=failed"))
    assert _drift(_saved(), _now(units=stopped)) == ["unit sparkfleet-ray-head.service is not active"]
    disabled = rs.parse_units(UNITS_OUT.replace("UnitFileState=enabled", "UnitFileState=disabled"))
    assert _drift(_saved(), _now(units=disabled)) == ["unit sparkfleet-ray-head.service is not enabled"]
    released = rs.parse_packages(DPKG_OUT.replace("hold ok", "install ok"))
    assert _drift(_saved(), _now(packages=released)) == ["package nvidia-driver-580-open is no longer held"]
    moved = rs.parse_packages(DPKG_OUT.replace("580.95.05", "580.159.03"))
    assert _drift(_saved(), _now(packages=moved)) == [
        "package nvidia-driver-580-open is at 580.159.03-0ubuntu1, was 580.95.05-0ubuntu1"]
    assert _drift(_saved(), _now(packages={})) == ["package nvidia-driver-580-open is not installed"]
    assert _drift(_saved(), _now(checks={"health": 1})) == ["check health failed (rc 1)"]


def test_a_side_not_judged_is_not_drift():
    saved = _saved(units={"sparkfleet-firewall.service": {"enabled": None, "active": False}})
    assert _drift(saved, _now()) == []


def test_a_file_recorded_by_size_and_time_drifts_on_either():
    big = {"type": "file", "size": 5, "mtime": 17, "mode": "0644", "owner": "root", "group": "root"}
    assert rs.by_stat(big) and not rs.by_stat(FILE) and not rs.by_stat(None)
    saved = _saved(paths={"/m/w": big})
    assert _drift(saved, _now(paths={"/m/w": dict(big)})) == []
    assert _drift(saved, _now(paths={"/m/w": dict(big, mtime=18)})) == ["/m/w: content changed"]
    assert _drift(saved, _now(paths={"/m/w": dict(big, size=6)})) == ["/m/w: content changed"]
