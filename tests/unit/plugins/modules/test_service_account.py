# -*- coding: utf-8 -*-
"""service_account: the group and account ray_head, ray_worker and vllm_service run as, in one call. The plan
(what to run for what the host has) is judged on each case; the module itself on this machine's real passwd
database, in check mode (it must change nothing there) and for an account that is already right."""

import grp
import os
import pwd
import stat

import pytest

from ansible_local import local_playbook
from ansible_collections.sparkfleet.gb10.plugins.modules.service_account import plan

WANT = {"name": "sparkfleet", "group": "sparkfleet", "home": "/var/lib/sparkfleet", "shell": "/usr/sbin/nologin",
        "mode": "0751"}
RIGHT_USER = (998, "/var/lib/sparkfleet", "/usr/sbin/nologin")


def test_nothing_to_do_for_an_account_that_is_right():
    assert plan(WANT, ("sparkfleet", 998), RIGHT_USER, True) == ([], [])


def test_a_new_host_gets_the_group_then_the_account_with_its_home():
    changes, commands = plan(WANT, None, None, False)
    assert changes == ["group sparkfleet created", "account sparkfleet created"]
    assert commands == [["groupadd", "--system", "sparkfleet"],
                        ["useradd", "--system", "--gid", "sparkfleet", "--shell", "/usr/sbin/nologin",
                         "--home-dir", "/var/lib/sparkfleet", "--create-home", "sparkfleet"],
                        ["chmod", "0751", "/var/lib/sparkfleet"]]


def test_a_home_another_role_made_first_is_handed_to_the_new_account():
    # model_store may create /var/lib/sparkfleet/models (and so /var/lib/sparkfleet, root's) before any
    # role makes the account; useradd --create-home leaves an existing directory to root.
    changes, commands = plan(WANT, ("sparkfleet", 998), None, True)
    assert commands[-2:] == [["chmod", "0751", "/var/lib/sparkfleet"], ["chown", "sparkfleet:sparkfleet", "/var/lib/sparkfleet"]]
    assert changes[-1] == "home /var/lib/sparkfleet handed to sparkfleet"


def test_a_home_of_an_existing_account_owned_by_someone_else_is_handed_back():
    changes, commands = plan(WANT, ("sparkfleet", 998), RIGHT_USER, True, home_foreign=True)
    assert commands == [["chmod", "0751", "/var/lib/sparkfleet"], ["chown", "sparkfleet:sparkfleet", "/var/lib/sparkfleet"]]
    assert plan(WANT, ("sparkfleet", 998), RIGHT_USER, True, home_foreign=False) == ([], [])


@pytest.mark.parametrize("user, argv", [
    ((100, "/var/lib/sparkfleet", "/usr/sbin/nologin"), ["--gid", "sparkfleet"]),
    ((998, "/var/lib/sparkfleet", "/bin/bash"), ["--shell", "/usr/sbin/nologin"]),
    ((998, "/home/sparkfleet", "/bin/bash"), ["--shell", "/usr/sbin/nologin", "--home", "/var/lib/sparkfleet"]),
])
def test_an_account_that_drifted_is_changed_in_one_usermod(user, argv):
    changes, commands = plan(WANT, ("sparkfleet", 998), user, True)
    assert commands == [["usermod"] + argv + ["sparkfleet"]]
    assert len(changes) == len(argv) // 2


def test_a_missing_group_of_an_existing_account_is_created_and_made_primary():
    changes, commands = plan(WANT, None, RIGHT_USER, True)
    assert commands == [["groupadd", "--system", "sparkfleet"], ["usermod", "--gid", "sparkfleet", "sparkfleet"]]


def test_a_missing_home_is_created_for_the_account():
    changes, commands = plan(WANT, ("sparkfleet", 998), RIGHT_USER, False)
    assert changes == ["home /var/lib/sparkfleet created"]
    assert commands == [["mkdir", "-p", "-m", "0751", "/var/lib/sparkfleet"],
                        ["chown", "sparkfleet:sparkfleet", "/var/lib/sparkfleet"]]


def test_a_home_of_another_mode_is_given_the_accounts_mode():
    # Ubuntu's useradd makes a home 0750: the model store's rsync daemon (root without CAP_DAC_READ_SEARCH) could not
    # pass through it to chroot into /var/lib/sparkfleet/models.
    changes, commands = plan(WANT, ("sparkfleet", 998), RIGHT_USER, True, home_mode="0750")
    assert commands == [["chmod", "0751", "/var/lib/sparkfleet"]]
    assert changes == ["mode of home /var/lib/sparkfleet set to 0751 (was 0750)"]
    assert plan(WANT, ("sparkfleet", 998), RIGHT_USER, True, home_mode="0751") == ([], [])


def _me():
    user = pwd.getpwuid(os.getuid())
    return (user.pw_name, grp.getgrgid(user.pw_gid).gr_name, user.pw_dir, user.pw_shell,
            "%04o" % stat.S_IMODE(os.stat(user.pw_dir).st_mode))


def test_the_module_leaves_a_right_account_alone_and_changes_nothing_in_check_mode(tmp_path):
    name, group, home, shell, mode = _me()
    play = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: The account this test runs as, as it is
      sparkfleet.gb10.service_account: {name: %(name)s, group: %(group)s, home: %(home)s, shell: %(shell)s,
                                        home_mode: "%(mode)s"}
      register: __same
    - name: A new account, in check mode
      sparkfleet.gb10.service_account: {name: sparkfleet-test-nobody}
      check_mode: true
      register: __new
    - name: Nothing changed for the first; the second would create both
      ansible.builtin.assert:
        that:
          - __same is not changed and __same.commands == []
          - __new is changed
          - __new.changes == ['group sparkfleet-test-nobody created', 'account sparkfleet-test-nobody created']
""" % {"name": name, "group": group, "home": home, "shell": shell, "mode": mode}
    proc = local_playbook(tmp_path, play)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with pytest.raises(KeyError):
        pwd.getpwnam("sparkfleet-test-nobody")
