# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Firmware updates through fwupd: the commands, and what fwupdmgr's answers mean.

Read against real recordings of fwupdmgr 2.0.20 (tests/fixtures/fwupd, README there). What the answers mean:

- ``fwupdmgr get-updates --json`` prints ``{"Devices": [...]}``: each device that has an update, with its
  current ``Version`` and its ``Releases``, newest first (the one ``fwupdmgr update`` installs). With nothing to
  install it prints ``{"Devices": []}`` and exits 0; without ``--json`` the same exits 2 (NOTHING_TO_DO).
- A failure with ``--json`` prints ``{"Error": {"Domain", "Code", "Message"}}`` and a non-zero exit code (a remote
  that cannot be reached: 101 for ``refresh``).
- ``fwupdmgr update --assume-yes --no-reboot-check DEVICE`` installs the newest release on DEVICE; it exits 0
  whether it installed one or found nothing newer (then it names the device as up to date).
- ``fwupdmgr get-devices --json`` prints ``{"Devices": [...]}``, each with its ``DeviceId`` and the ``Version``
  it runs now; ``fwupdmgr get-history --json`` the installs fwupd remembers, each device with ``UpdateState`` (2
  success, 3 failed, 4 needs a reboot, 5 failed transiently) and ``UpdateError``. After the reboot of an update
  that needs one, fwupd itself compares the device's version with the release and records success or "failed to
  run update on reboot: expected X and got Y" (fwupd's src/fu-engine.c, fu_engine_update_history_device).

Pure Python, no Ansible imports.
"""

from __future__ import annotations

import json

# fwupdmgr's exit code when there is nothing to do (no update, no updatable device, metadata already current).
NOTHING_TO_DO = 2
# In the C locale, as the collection runs every command it reads.
ENVIRON = {"LC_ALL": "C.UTF-8", "NO_COLOR": "1"}


class FwupdError(Exception):
    """fwupdmgr failed; the message says how, in fwupd's words."""


def refresh_argv(fwupdmgr="fwupdmgr"):
    """Download the metadata of the enabled remotes (as apt-get update does for packages)."""
    return [fwupdmgr, "refresh", "--json"]


def get_updates_argv(fwupdmgr="fwupdmgr"):
    return [fwupdmgr, "get-updates", "--json"]


def update_argv(device_id, fwupdmgr="fwupdmgr"):
    """Install the newest release on one device; the reboot is the caller's (os_update's), not fwupdmgr's."""
    return [fwupdmgr, "update", "--assume-yes", "--no-reboot-check", device_id]


def get_devices_argv(fwupdmgr="fwupdmgr"):
    return [fwupdmgr, "get-devices", "--json"]


def get_history_argv(fwupdmgr="fwupdmgr"):
    return [fwupdmgr, "get-history", "--json"]


# fwupd's FwupdUpdateState, as get-history --json prints it.
UPDATE_STATES = {0: "unknown", 1: "pending", 2: "success", 3: "failed", 4: "needs-reboot", 5: "failed-transient"}


def _error(rc, out, err):
    """fwupd's own message of a failure: the Error object of --json output, else the last line it printed."""
    try:
        message = json.loads(out).get("Error", {}).get("Message")
    except (ValueError, AttributeError):
        message = None
    if not message:
        lines = [line.strip() for line in ((err or "") + "\n" + (out or "")).splitlines()
                 if line.strip() and not line.strip().endswith("%")]
        message = lines[-1] if lines else "no output"
    return "fwupdmgr exited %s: %s" % (rc, message)


def check_refresh(rc, out, err):
    """None when ``fwupdmgr refresh --json`` worked or had nothing to do, else raise FwupdError."""
    if rc not in (0, NOTHING_TO_DO):
        raise FwupdError(_error(rc, out, err))


def _answer(rc, out, err):
    """The JSON object of a --json answer; FwupdError when fwupdmgr failed (its exit code, an Error object, no JSON)."""
    try:
        data = json.loads(out)
    except ValueError:
        raise FwupdError(_error(rc, out, err))
    if not isinstance(data, dict) or rc != 0 or "Error" in data:
        raise FwupdError(_error(rc, out, err))
    return data


def parse_updates(rc, out, err=""):
    """``fwupdmgr get-updates --json`` -> the updates it offers, one per device:
    ``{device_id, name, vendor, plugin, version, update_version, releases, summary, remote, device_flags,
    release_flags}`` (``update_version`` the release ``fwupdmgr update`` installs, ``releases`` every version on
    offer, newest first). Raise FwupdError when fwupdmgr failed."""
    if rc == NOTHING_TO_DO:
        return []
    data = _answer(rc, out, err)
    updates = []
    for device in data.get("Devices") or []:
        releases = device.get("Releases") or []
        if not releases:
            continue
        first = releases[0]
        updates.append({
            "device_id": device.get("DeviceId"),
            "name": device.get("Name"),
            "vendor": device.get("Vendor"),
            "plugin": device.get("Plugin"),
            "version": device.get("Version"),
            "update_version": first.get("Version"),
            "releases": [release.get("Version") for release in releases],
            "summary": first.get("Summary"),
            "remote": first.get("RemoteId"),
            "device_flags": list(device.get("Flags") or []),
            "release_flags": list(first.get("Flags") or []),
        })
    return updates


def parse_devices(rc, out, err=""):
    """``fwupdmgr get-devices --json`` or ``get-history --json`` -> ``{device_id: {name, version, update_state,
    update_error, release}}`` (``update_state`` by name, ``release`` the version of the newest release listed: in
    the history, the one that was installed). Raise FwupdError when fwupdmgr failed."""
    data = _answer(rc, out, err)
    devices = {}
    for device in data.get("Devices") or []:
        releases = device.get("Releases") or []
        devices[device.get("DeviceId")] = {
            "name": device.get("Name"),
            "version": device.get("Version"),
            "update_state": UPDATE_STATES.get(device.get("UpdateState"), device.get("UpdateState")),
            "update_error": device.get("UpdateError"),
            "release": releases[0].get("Version") if releases else None,
        }
    return devices


def verify(installed, devices, history=None):
    """Each update of INSTALLED (parse_updates' items, installed before the reboot) judged by the version its device
    runs now (DEVICES: parse_devices of get-devices): ``{device_id, name, expected, found, ok, history}``, where
    ``history`` is what fwupd recorded of the install (HISTORY: parse_devices of get-history), for the reason of a
    failure."""
    results = []
    for update in installed:
        device = devices.get(update["device_id"]) or {}
        recorded = (history or {}).get(update["device_id"]) or {}
        found = device.get("version")
        results.append({
            "device_id": update["device_id"],
            "name": update.get("name") or device.get("name"),
            "expected": update["update_version"],
            "found": found,
            "ok": found is not None and found == update["update_version"],
            "history": dict((k, recorded.get(k)) for k in ("update_state", "update_error", "release")) if recorded else None,
        })
    return results


def describe(update):
    """One line for a person: the device, its version and the one the update brings."""
    return "%s %s -> %s" % (update["name"], update["version"], update["update_version"])
