# -*- coding: utf-8 -*-
"""host_read: paths and read-only commands answered together, a missing path or program being an
answer (not an error), repeated names refused."""

import grp
import os
import pwd
import subprocess
import sys

import pytest

from ansible_collections.sparkfleet.gb10.plugins.modules import host_read as m

OWNER = pwd.getpwuid(os.getuid())[0]
GROUP = grp.getgrgid(os.getgid())[0]


def run_command(argv, cwd=None, handle_exceptions=True):
    """The subset of AnsibleModule.run_command the module uses, on a real subprocess."""
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def test_each_path_is_described(tmp_path):
    (tmp_path / "stamp.json").write_text('{"revision": "v2.28.9-1"}\n')
    os.chmod(str(tmp_path / "stamp.json"), 0o644)
    (tmp_path / "dir").mkdir()
    os.chmod(str(tmp_path / "dir"), 0o755)
    (tmp_path / "tool").write_text("#!/bin/sh\n")
    os.chmod(str(tmp_path / "tool"), 0o755)
    os.symlink(str(tmp_path / "stamp.json"), str(tmp_path / "link"))
    os.symlink(str(tmp_path / "nowhere"), str(tmp_path / "dangling"))
    files, commands, dummy = m.read_all([
        {"path": str(tmp_path / "stamp.json"), "content": True},
        {"path": str(tmp_path / "dir"), "content": True},
        {"path": str(tmp_path / "link")},
        {"path": str(tmp_path / "dangling")},
        {"path": str(tmp_path / "missing"), "content": True},
        {"path": str(tmp_path / "tool")},
    ], [], run_command)
    assert commands == {}
    assert files[str(tmp_path / "stamp.json")] == {
        "exists": True, "type": "file", "islink": False, "executable": False, "mode": "0644", "owner": OWNER, "group": GROUP,
        "content": '{"revision": "v2.28.9-1"}\n'}
    assert files[str(tmp_path / "dir")] == {
        "exists": True, "type": "directory", "islink": False, "executable": True, "mode": "0755", "owner": OWNER,
        "group": GROUP, "content": None}
    assert files[str(tmp_path / "link")] == {
        "exists": True, "type": "file", "islink": True, "executable": False, "mode": "0644", "owner": OWNER,
        "group": GROUP}
    assert files[str(tmp_path / "dangling")] == {
        "exists": False, "type": None, "islink": True, "executable": False, "mode": None, "owner": None,
        "group": None}
    assert files[str(tmp_path / "missing")] == {
        "exists": False, "type": None, "islink": False, "executable": False, "mode": None, "owner": None, "group": None,
        "content": None}
    assert files[str(tmp_path / "tool")]["executable"] is True
    assert files[str(tmp_path / "tool")]["mode"] == "0755"


def test_undecodable_bytes_do_not_fail_the_read(tmp_path):
    (tmp_path / "bin").write_bytes(b"ok \xff\xfe end")
    files, dummy, dummy = m.read_all([{"path": str(tmp_path / "bin"), "content": True}], [], run_command)
    assert files[str(tmp_path / "bin")]["content"].startswith("ok ")
    assert files[str(tmp_path / "bin")]["content"].endswith(" end")


def test_commands_answer_by_name_in_order(tmp_path):
    log = tmp_path / "order"
    dummy, commands, dummy = m.read_all([], [
        {"name": "first", "argv": [sys.executable, "-c", "open(%r, 'a').write('1'); print('one'); print('two')" % str(log)]},
        {"name": "fails", "argv": [sys.executable, "-c", "import sys; open(%r, 'a').write('2'); sys.stderr.write('bad\\n'); sys.exit(3)" % str(log)]},
        {"name": "here", "argv": [sys.executable, "-c", "import os; print(os.getcwd())"], "chdir": str(tmp_path)},
    ], run_command)
    assert log.read_text() == "12"
    assert commands["first"]["rc"] == 0
    assert commands["first"]["stdout"] == "one\ntwo"  # no final line break, as the command module
    assert commands["first"]["stdout_lines"] == ["one", "two"]
    assert commands["fails"]["rc"] == 3 and commands["fails"]["stderr"] == "bad"
    assert commands["here"]["stdout"] == str(tmp_path)


def test_a_missing_program_is_an_answer():
    dummy, commands, dummy = m.read_all([], [{"name": "nvcc", "argv": ["/nonexistent/bin/nvcc", "--version"]}], run_command)
    assert commands["nvcc"]["rc"] == m.NOT_RUNNABLE
    assert commands["nvcc"]["stdout"] == ""
    assert "nvcc" in commands["nvcc"]["stderr"]
    assert commands["nvcc"]["argv"] == ["/nonexistent/bin/nvcc", "--version"]


@pytest.mark.parametrize("files, commands, message", [
    ([], [{"name": "a", "argv": ["true"]}, {"name": "a", "argv": ["false"]}], "the name a is given more than once"),
    ([], [{"name": "empty", "argv": []}], "empty has an empty argv"),
    ([{"path": "relative/stamp"}], [], "relative/stamp is not an absolute path"),
])
def test_wrong_requests_are_named(files, commands, message):
    with pytest.raises(ValueError, match=message):
        m.read_all(files, commands, run_command)


@pytest.mark.parametrize("globs, message", [
    ([{"name": "u", "pattern": "/etc/*.service"}, {"name": "u", "pattern": "/etc/*.timer"}],
     "globs: the name u is given more than once"),
    ([{"name": "u", "pattern": "etc/*.service"}], "etc/\\*.service is not an absolute pattern"),
])
def test_wrong_patterns_are_named(globs, message):
    with pytest.raises(ValueError, match=message):
        m.read_all([], [], run_command, globs=globs)


def test_globs_list_the_regular_files_they_match(tmp_path):
    for name in ("sparkfleet-vllm-b.service", "sparkfleet-vllm-a.service", "other.service"):
        (tmp_path / name).write_text("[Unit]\n")
    (tmp_path / "sparkfleet-vllm-dir.service").mkdir()
    os.symlink("/dev/null", str(tmp_path / "sparkfleet-vllm-masked.service"))
    dummy, dummy, globs = m.read_all([], [], run_command, globs=[
        {"name": "units", "pattern": str(tmp_path / "sparkfleet-vllm-*.service")},
        {"name": "none", "pattern": str(tmp_path / "sparkfleet-headwatch-*.service")},
    ])
    assert globs == {"units": [str(tmp_path / "sparkfleet-vllm-a.service"), str(tmp_path / "sparkfleet-vllm-b.service")],
                     "none": []}


def test_nothing_runs_when_the_request_is_wrong(tmp_path):
    log = tmp_path / "ran"
    with pytest.raises(ValueError):
        m.read_all([], [{"name": "a", "argv": ["touch", str(log)]}, {"name": "a", "argv": ["true"]}], run_command)
    assert not log.exists()


def test_an_owner_without_a_name_is_its_number():
    """A file left by an account since removed (an old service user): its number, so a caller sees it differs."""
    unused = max([entry.pw_uid for entry in pwd.getpwall()] + [entry.gr_gid for entry in grp.getgrall()]) + 1000
    assert m._name(pwd.getpwuid, unused) == str(unused)
    assert m._name(grp.getgrgid, unused) == str(unused)
    assert m._name(pwd.getpwuid, os.getuid()) == OWNER
