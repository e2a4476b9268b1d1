# -*- coding: utf-8 -*-
"""plugins/module_utils/model_entry.py: which keys of a model entry hold secrets."""

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import model_entry, redaction


@pytest.mark.parametrize("name, secret", [
    ("hf_token", True), ("api_key", True), ("HF_TOKEN", True), ("token", True),
    ("api_key_file", False), ("HF_TOKEN_PATH", False), ("ray_auth_token_file", False), ("api_key_optout_reason", False),
    ("max_num_batched_tokens", False),
])
def test_a_key_the_spec_does_not_know_is_judged_as_the_redaction_judges_it(name, secret):
    """One judgement of names: the entry checks and every message's redaction (review: *_file and *_path keys were
    secret to the one and not to the other)."""
    assert model_entry.is_secret(name) is secret
    assert model_entry.is_secret(name) is redaction.names_secret(name)
