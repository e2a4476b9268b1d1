# -*- coding: utf-8 -*-
"""The page-cache helper (roles/vllm_service/files/sparkfleet-page-cache.py, rule members_drop_page_cache), run for
real: a member answers on a TCP socket the way systemd hands it a connection (Accept=yes: the connection is stdin and
stdout, the peer in REMOTE_ADDR), the head's ``ask`` waits for every member, and each drop lands in the record the
health probe exports. The drop command is a stand-in that writes a marker (a test cannot write drop_caches)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HELPER = os.path.join(REPO, "roles", "vllm_service", "files", "sparkfleet-page-cache.py")
PROBE = os.path.join(REPO, "roles", "fleet_health", "files", "sparkfleet-health-probe.py")


class Member(object):
    """A member host: a listening socket on the loopback and, per connection, ``serve`` started as systemd's
    Accept=yes socket unit starts its service."""

    def __init__(self, tmp, name, allow=("127.0.0.1",), command=None):
        (tmp / name).mkdir()
        self.state = str(tmp / name / "drops.json")
        self.marker = tmp / name / "dropped"
        self.command = command or "echo 3 > %s" % self.marker
        self.name, self.allow = name, list(allow)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.served = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            argv = [sys.executable, HELPER, "serve", "--command", self.command, "--state", self.state, "--host", self.name]
            argv += ["--allow=%s" % a for a in self.allow]
            proc = subprocess.run(argv, stdin=conn.fileno(), stdout=conn.fileno(), stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ, REMOTE_ADDR=peer[0]), check=False)
            conn.close()
            self.served.append(proc)

    def arg(self):
        return "--member=%s=127.0.0.1:%d" % (self.name, self.port)

    def recent(self):
        with open(self.state) as handle:
            return json.load(handle)["recent"]

    def close(self):
        self.sock.close()


def ask(*members, extra=()):
    argv = [sys.executable, HELPER, "ask", "--model", "tiny-tp", "--unit", "sparkfleet-vllm-tiny-tp", "--head", "spark-1",
            "--source", "127.0.0.1", "--retry-every", "0.2"] + [m if isinstance(m, str) else m.arg() for m in members]
    return subprocess.run(argv + list(extra), capture_output=True, text=True, timeout=120, check=False)


def test_the_head_returns_once_every_member_dropped_and_each_records_it(tmp_path):
    one, two = Member(tmp_path, "spark-2"), Member(tmp_path, "spark-3")
    proc = ask(one, two)
    assert proc.returncode == 0, proc.stderr
    for member in (one, two):
        # dropped before the head went on: the marker is there when ask returns
        assert member.marker.read_text().strip() == "3"
        [entry] = member.recent()
        assert entry["ok"] is True and entry["how"] == "asked" and entry["peer"] == "127.0.0.1"
        assert (entry["unit"], entry["model"], entry["head"]) == ("sparkfleet-vllm-tiny-tp", "tiny-tp", "spark-1")
        assert isinstance(entry["monotonic"], float) and isinstance(entry["at"], float)
        with open(member.state) as handle:
            assert json.load(handle)["last"] == entry
        # the state file is readable by the probe and the summary, replaced whole (no temporary file left)
        assert oct(os.stat(member.state).st_mode & 0o777) == "0o644"
        assert sorted(os.listdir(os.path.dirname(member.state))) == ["dropped", "drops.json", "drops.json.lock"]
    assert "spark-2 (127.0.0.1:%d) dropped its page cache" % one.port in proc.stdout


def test_a_member_answers_only_the_heads_it_follows(tmp_path):
    member = Member(tmp_path, "spark-2", allow=["192.168.100.10"])
    proc = ask(member)
    assert proc.returncode == 1
    assert "spark-2 did not drop its page cache for sparkfleet-vllm-tiny-tp" in proc.stderr
    assert "127.0.0.1 is not the fabric address of a head of a model spark-2 follows (192.168.100.10)" in proc.stderr
    assert not member.marker.exists() and not os.path.exists(member.state)


def test_a_drop_that_fails_on_a_member_fails_the_start_naming_it_and_is_recorded(tmp_path):
    member = Member(tmp_path, "spark-2", command="echo 3 > /nonexistent/drop_caches")
    proc = ask(member)
    assert proc.returncode == 1
    assert "spark-2 did not drop its page cache" in proc.stderr and "the drop command exited 2" in proc.stderr
    [entry] = member.recent()
    assert entry["ok"] is False and "error" in entry
    with open(member.state) as handle:
        assert "last" not in json.load(handle)  # the last drop that worked: none


def test_the_head_waits_for_a_member_that_is_not_there_yet(tmp_path):
    """A member whose socket is not listening (rebooting, its fabric not up): the head asks again until it answers."""
    late = socket.socket()
    late.bind(("127.0.0.1", 0))
    port = late.getsockname()[1]  # bound, not listening: connections are refused
    proc = subprocess.Popen([sys.executable, HELPER, "ask", "--model", "tiny-tp", "--unit", "u", "--head", "spark-1",
                             "--source", "127.0.0.1", "--retry-every", "0.1", "--member=spark-2=127.0.0.1:%d" % port],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline()
    assert "waiting for spark-2 (127.0.0.1:%d)" % port in first and proc.poll() is None
    state = tmp_path / "drops.json"
    served = threading.Event()

    def member():
        late.listen(1)
        conn, peer = late.accept()
        subprocess.run([sys.executable, HELPER, "serve", "--command", "true", "--state", str(state), "--host",
                        "spark-2", "--allow=127.0.0.1"], stdin=conn.fileno(), stdout=conn.fileno(),
                       env=dict(os.environ, REMOTE_ADDR=peer[0]), check=False)
        conn.close()
        served.set()

    threading.Thread(target=member, daemon=True).start()
    assert proc.wait(timeout=60) == 0
    assert served.wait(30) and json.loads(state.read_text())["last"]["how"] == "asked"
    late.close()


def test_systemd_ending_the_start_names_who_it_still_waited_for(tmp_path):
    """TimeoutStartSec ends a start whose member never answered: SIGTERM, and the journal says whom and the fix."""
    nobody = socket.socket()
    nobody.bind(("127.0.0.1", 0))
    port = nobody.getsockname()[1]
    proc = subprocess.Popen([sys.executable, HELPER, "ask", "--model", "tiny-tp", "--unit", "sparkfleet-vllm-tiny-tp",
                             "--head", "spark-1", "--source", "127.0.0.1", "--retry-every", "0.1",
                             "--member=spark-2=127.0.0.1:%d" % port], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert "waiting for spark-2" in proc.stderr.readline()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 1
    said = proc.stderr.read()
    assert "the start of sparkfleet-vllm-tiny-tp ended before every member dropped its page cache" in said
    assert "still waiting for spark-2: " in said and "sparkfleet-page-cache.socket" in said
    nobody.close()


def test_a_local_drop_is_recorded_and_its_failure_fails_the_start(tmp_path):
    state = tmp_path / "state" / "drops.json"
    ok = subprocess.run([sys.executable, HELPER, "local", "--command", "true", "--state", str(state), "--unit",
                         "sparkfleet-vllm-a", "--model", "a"], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([sys.executable, HELPER, "local", "--command", "exit 4", "--state", str(state), "--unit",
                          "sparkfleet-vllm-a"], capture_output=True, text=True, check=False)
    assert bad.returncode == 1 and "page cache not dropped before sparkfleet-vllm-a" in bad.stderr
    record = json.loads(state.read_text())
    assert [(e["how"], e["ok"]) for e in record["recent"]] == [("local", True), ("local", False)]
    assert record["last"]["ok"] is True and record["last"]["unit"] == "sparkfleet-vllm-a"


def test_no_member_no_wait():
    assert ask().returncode == 0


@pytest.mark.parametrize("text", ["spark-2", "spark-2=10.0.0.2", "=10.0.0.2:8875", "spark-2=10.0.0.2:port"])
def test_a_member_is_written_host_address_port(text):
    proc = ask("--member=" + text)
    assert proc.returncode == 2 and "host=address:port" in proc.stderr


def test_the_probe_exports_what_the_helper_recorded(tmp_path):
    member = Member(tmp_path, "spark-2")
    assert ask(member).returncode == 0
    subprocess.run([sys.executable, HELPER, "local", "--command", "true", "--state", member.state], check=True)
    spec = importlib.util.spec_from_file_location("sparkfleet_health_probe_page_cache", PROBE)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    textfile = tmp_path / "metrics"
    textfile.mkdir()
    config = {"textfile_dir": str(textfile), "page_cache_file": member.state}
    samples, failures = probe.collect(config)
    recent = member.recent()
    assert failures == []
    assert samples == [("sparkfleet_page_cache_dropped_timestamp_seconds", {"how": "asked"}, recent[0]["at"]),
                       ("sparkfleet_page_cache_dropped_timestamp_seconds", {"how": "local"}, recent[1]["at"])]
    assert "sparkfleet_page_cache_dropped_timestamp_seconds" in probe.METRICS
    # failed drops do not count; no record, no metric; an unreadable one is a failed check
    assert probe.page_cache_samples({"recent": [dict(recent[0], ok=False)]}) == []
    assert probe.collect(dict(config, page_cache_file=str(tmp_path / "none.json")))[0] == []
    (tmp_path / "broken.json").write_text("{")
    assert probe.collect(dict(config, page_cache_file=str(tmp_path / "broken.json")))[1][0].startswith("page cache:")
