# -*- coding: utf-8 -*-
"""model_store_addresses and model_store_manifests: what the model store reads of the play's other hosts (their
fabric address; the manifests a fetching host read), as the Jinja of roles/model_store/vars/main.yml read it."""

from jinja2 import Undefined

from ansible_collections.sparkfleet.gb10.plugins.filter.model_store_plan import (model_store_addresses,
                                                                                 model_store_manifests)


def test_each_host_takes_its_model_store_address_else_its_fabric_address_else_none():
    hostvars = {
        "a": {"model_store_fabric_address": "10.0.0.1", "sparkfleet_fabric_address": "10.9.9.9"},
        "b": {"sparkfleet_fabric_address": "10.0.0.2"},
        "c": {},
        # set but undefined when templated (hostvars gives Ansible's undefined marker): not set, as default() reads it
        "d": {"model_store_fabric_address": Undefined(name="nope"), "sparkfleet_fabric_address": "10.0.0.4"},
        "e": {"model_store_fabric_address": Undefined(name="nope"), "sparkfleet_fabric_address": Undefined(name="x")},
        # set, even empty or null: kept (default() without its second argument)
        "f": {"model_store_fabric_address": "", "sparkfleet_fabric_address": "10.0.0.6"},
        "g": {"model_store_fabric_address": None, "sparkfleet_fabric_address": "10.0.0.7"},
    }
    hosts = ["g", "a", "b", "c", "d", "e", "f"]
    got = model_store_addresses(hosts, hostvars)
    assert got == {"a": "10.0.0.1", "b": "10.0.0.2", "c": "", "d": "10.0.0.4", "e": "", "f": "", "g": None}
    assert list(got) == hosts  # the play's order: a model without nodes is fetched by its first holder in it


def test_a_host_holds_its_own_manifests_and_those_its_fetching_hosts_read():
    own = {"mine": {"w.safetensors": {"size": 1}}}
    hostvars = {
        "f1": {"_model_store_manifests": {"m1": {"a.safetensors": {"size": 2}}, "empty": {}}},
        "f2": {"_model_store_manifests": {"m2": {"b.bin": {"size": 3}}}},
        "f3": {},
    }
    jobs = [{"role": "receive", "name": "m1", "fetcher": "f1"},
            {"role": "receive", "name": "m2", "fetcher": "f2"},
            {"role": "receive", "name": "empty", "fetcher": "f1"},   # an empty manifest: nothing to size from
            {"role": "receive", "name": "m9", "fetcher": "f1"},      # the fetcher read no manifest of it
            {"role": "receive", "name": "m3", "fetcher": "f3"},      # the fetcher read none at all
            {"role": "receive", "name": "m4", "fetcher": "gone"}]    # not a host of the inventory
    got = model_store_manifests(jobs, hostvars, own)
    assert got == {"mine": own["mine"], "m1": {"a.safetensors": {"size": 2}}, "m2": {"b.bin": {"size": 3}}}
    assert own == {"mine": {"w.safetensors": {"size": 1}}}  # the host's own fact is left as it is
    assert model_store_manifests([], hostvars) == {}
    # a received manifest names the model: it wins over a stale one of the host's own
    assert model_store_manifests(jobs[:1], hostvars, {"m1": {"old": {"size": 9}}}) == {"m1": {"a.safetensors": {"size": 2}}}
