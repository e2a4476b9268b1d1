# -*- coding: utf-8 -*-
"""Filter role_confirmed: whether a host confirmed a role converged earlier in the run, read from the fact the
role_state action leaves, through the same reader (module_utils/role_state.host_confirmations) as fabric_confirmed."""

from ansible_collections.sparkfleet.gb10.plugins.filter.role_confirmed import FilterModule


def test_role_confirmed_reads_the_same_fact_of_one_host():
    from ansible_collections.sparkfleet.gb10.plugins.filter.role_confirmed import role_confirmed
    host = {"ansible_facts": {"sparkfleet_confirmed": {"nccl": [], "qsfp_network": ["ping spark-2"]}}}
    assert role_confirmed({"a": host}, "a", "nccl") is True
    # A role that drifted is left out of the fact; a host without the fact or outside hostvars confirmed nothing.
    assert role_confirmed({"a": host}, "a", "vllm_venv") is False
    for hostvars in ({"a": {"ansible_facts": {}}}, {"a": {}}, {}, None):
        assert role_confirmed(hostvars, "a", "nccl") is False


def test_filter_is_registered():
    assert set(FilterModule().filters()) == {"role_confirmed"}
