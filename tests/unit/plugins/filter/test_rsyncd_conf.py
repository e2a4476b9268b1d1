# -*- coding: utf-8 -*-
"""rsyncd_conf: the one shape of the fabric rsync daemons (model store, NCCL prefix)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.rsyncd_conf import rsyncd_conf

SHARE = {"address": "192.168.100.10", "port": 8873, "log_file": "/var/log/x.log", "module": "sparkfleet-models",
         "path": "/var/lib/sparkfleet/models", "hosts_allow": ["192.168.100.11", "", "192.168.100.12"],
         "exclude": ["/*/.sparkfleet-verified.json", "/.partial/"]}


def settings(text):
    return [tuple(part.strip() for part in line.split("=", 1)) for line in text.splitlines() if "=" in line]


def test_read_only_chrooted_share_bound_to_the_fabric_address_for_its_peers_alone():
    text = rsyncd_conf(SHARE)
    got = dict(settings(text))
    assert got["address"] == "192.168.100.10" and got["port"] == "8873"
    assert (got["use chroot"], got["uid"], got["read only"], got["list"]) == ("yes", "nobody", "yes", "no")
    # Empty addresses (a peer without one) are dropped; everyone else is denied.
    assert got["hosts allow"] == "192.168.100.11 192.168.100.12" and got["hosts deny"] == "*"
    assert got["exclude"] == "/*/.sparkfleet-verified.json /.partial/"
    # The scenarios read who pulled which file from the transfer log.
    assert got["transfer logging"] == "yes" and got["log format"] == "%a %o %m/%f %l"
    # Global settings come before the module, whose settings follow its header.
    assert text.index("address =") < text.index("[sparkfleet-models]") < text.index("path =")
    assert "max connections" not in got and "comment" not in got


def test_optional_comment_and_connection_limit():
    got = dict(settings(rsyncd_conf(dict(SHARE, comment="model store", max_connections=4, exclude=[]))))
    assert got["comment"] == "model store" and got["max connections"] == "4" and "exclude" not in got


@pytest.mark.parametrize("change, words", [
    ({"address": ""}, "missing address"),
    ({"port": None}, "missing port"),
    ({"hosts_allow": ["", None]}, "hosts_allow is empty"),
])
def test_a_share_that_would_bind_nowhere_or_admit_no_one_is_refused(change, words):
    with pytest.raises(AnsibleFilterError, match=words):
        rsyncd_conf(dict(SHARE, **change))
