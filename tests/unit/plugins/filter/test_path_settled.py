# -*- coding: utf-8 -*-
"""path_settled, on what host_read really answers: a role skips its file task only when the path already is what
the task would make it; a drifted mode, owner or group, another type or no path keeps the task."""

import grp
import os
import pwd

import pytest

from ansible_collections.sparkfleet.gb10.plugins.filter.path_settled import path_settled
from ansible_collections.sparkfleet.gb10.plugins.modules import host_read

OWNER = pwd.getpwuid(os.getuid())[0]
GROUP = grp.getgrgid(os.getgid())[0]


def seen(path):
    files, dummy, dummy = host_read.read_all([{"path": str(path)}], [], None)
    return files[str(path)]


def test_a_directory_as_wanted_is_settled(tmp_path):
    conf = tmp_path / "ray"
    conf.mkdir()
    os.chmod(str(conf), 0o750)
    assert path_settled(seen(conf), "directory", OWNER, GROUP, "0750") is True
    assert path_settled(seen(conf), "directory", OWNER, GROUP, "750") is True


@pytest.mark.parametrize("type_,owner,group,mode", [
    ("file", OWNER, GROUP, "0750"),
    ("directory", "nobody-else", GROUP, "0750"),
    ("directory", OWNER, "no-such-group", "0750"),
    ("directory", OWNER, GROUP, "0755"),
    ("directory", OWNER, GROUP, "not-octal"),
])
def test_any_difference_keeps_the_task(tmp_path, type_, owner, group, mode):
    conf = tmp_path / "ray"
    conf.mkdir()
    os.chmod(str(conf), 0o750)
    assert path_settled(seen(conf), type_, owner, group, mode) is False


def test_a_drifted_token_mode_and_a_missing_path_are_not_settled(tmp_path):
    token = tmp_path / "auth_token"
    token.write_text("x")
    os.chmod(str(token), 0o644)
    assert path_settled(seen(token), "file", OWNER, GROUP, "0600") is False
    os.chmod(str(token), 0o600)
    assert path_settled(seen(token), "file", OWNER, GROUP, "0600") is True
    assert path_settled(seen(tmp_path / "missing"), "file", OWNER, GROUP, "0600") is False
    assert path_settled(None, "file", OWNER, GROUP, "0600") is False
