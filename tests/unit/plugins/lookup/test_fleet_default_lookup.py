# -*- coding: utf-8 -*-
"""The defaults several roles share (plugins/module_utils/fleet_defaults.py): each is written once, and the
roles read it through the sparkfleet.gb10.fleet_default lookup instead of repeating the value."""

import glob
import os
import re

import pytest
import yaml
from ansible.errors import AnsibleError

from ansible_collections.sparkfleet.gb10.plugins.lookup.fleet_default import LookupModule
from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import FLEET_DEFAULTS

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
# The files that set or use a role's value (comments and documentation may name a default).
ROLE_FILES = sorted(glob.glob(os.path.join(TOP, "roles", "*", "defaults", "main.yml"))
                    + glob.glob(os.path.join(TOP, "roles", "*", "vars", "main.yml"))
                    + glob.glob(os.path.join(TOP, "roles", "*", "tasks", "*.yml"))
                    + glob.glob(os.path.join(TOP, "roles", "*", "templates", "*.j2"))
                    + glob.glob(os.path.join(TOP, "playbooks", "*.yml"))
                    + glob.glob(os.path.join(TOP, "playbooks", "templates", "*.j2")))


def test_lookup_returns_each_default_in_term_order():
    names = sorted(FLEET_DEFAULTS)
    assert LookupModule().run(names) == [FLEET_DEFAULTS[n][0] for n in names]


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(AnsibleError, match="unknown fleet default 'venv'.*venv_path"):
        LookupModule().run(["venv"])


def _code(path):
    """The file without its comment lines."""
    with open(path) as handle:
        return "\n".join(line for line in handle.read().splitlines() if not line.lstrip().startswith(("#", "{#")))


@pytest.mark.parametrize("name", sorted(n for n in FLEET_DEFAULTS if n != "service_user"))
def test_no_role_writes_a_shared_default_again(name):
    value = str(FLEET_DEFAULTS[name][0])  # a port too (page_cache_port), as a role file would write it
    pattern = re.compile(r"(?<![\w.-])%s(?![\w/.-])" % re.escape(value))
    written = [os.path.relpath(p, TOP) for p in ROLE_FILES if pattern.search(_code(p))]
    assert written == [], "%s (%s) is written again; read lookup('sparkfleet.gb10.fleet_default', '%s')" % (
        value, name, name)


def test_roles_that_share_a_default_agree():
    """Every shared default is read, through the lookup, by the roles that must agree on it (the service account
    included, whose value is too common a word for the text scan above)."""
    readers = {}
    for path in ROLE_FILES:
        role = os.path.relpath(path, TOP).split(os.sep)[1]
        for name in re.findall(r"fleet_default', '(\w+)'", _code(path)):
            readers.setdefault(name, set()).add(role)
    assert set(readers) == set(FLEET_DEFAULTS)
    assert readers["service_user"] == {"ray", "vllm_service"}
    assert readers["venv_freeze_name"] == {"vllm_venv", "ray", "vllm_service"}
    assert {"nccl", "ray", "vllm_service", "fleet_health"} <= readers["nccl_env_file"]
    assert {"ray", "fleet_verify", "fleet_health"} <= readers["ray_head_unit"]
    assert {"ray", "fleet_verify", "fleet_health"} <= readers["ray_worker_unit"]
    with open(os.path.join(TOP, "roles", "ray", "defaults", "main.yml")) as handle:
        assert "ray_auth_token_file" in yaml.safe_load(handle)["ray_auth_token_file"]
