# -*- coding: utf-8 -*-
"""The one redaction of the collection (plugins/module_utils/redaction.py): it knows every secret value of the run
and hides it wherever a message shows it, inside lists, mappings and strings; and an inventory with a distinct secret
in every place one can be written (tests/preflight/cases/secrets_everywhere) is refused without showing any of them."""

from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible_collections.sparkfleet.gb10.plugins.action.fleet_preflight import fleet_checks
from ansible_collections.sparkfleet.gb10.plugins.callback import fleet_table, progress
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_preflight as fp
from ansible_collections.sparkfleet.gb10.plugins.module_utils import redaction, role_settings
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import MODEL_ENTRY_SPEC

from inventory_loader import load_fleet

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
PLANTED = os.path.join(TOP, "tests", "preflight", "cases", "secrets_everywhere")
ROLE_SPECS = fp.load_role_specs(os.path.join(TOP, "roles"))
HIDDEN = redaction.SECRET_SHOWN
PLANT = re.compile(r"plnt-[A-Za-z0-9-]+|hf_plnt[A-Za-z0-9]+")


@pytest.mark.parametrize("value,secrets,shown", [
    # A whole list quoted by a refusal: the item after a secret flag, and --flag=value.
    (["--api-key", "k3y-in-argv", "--port", "8000"], (), ["--api-key", HIDDEN, "--port", "8000"]),
    (["--hf-token=tok-in-argv"], (), ["--hf-token=" + HIDDEN]),
    # A whole mapping: the value under a secret-named key, however deep, and not its neighbours.
    ({"type": "hf", "repo": "Qwen/Qwen3-8B", "token": "t0ken-value"}, (),
     {"type": "hf", "repo": "Qwen/Qwen3-8B", "token": HIDDEN}),
    ({"credentials": {"user": "bob-the-user", "pass": ["p4ss-word"]}}, (),
     {"credentials": {"user": HIDDEN, "pass": [HIDDEN]}}),
    # A secret the run knows, inside a text of any shape.
    ("differs from spark-1 ({'x': 'kn0wn-secret'})", ("kn0wn-secret",), "differs from spark-1 ({'x': '%s'})" % HIDDEN),
    (("a", "kn0wn-secret"), ("kn0wn-secret",), ("a", HIDDEN)),
    # Shapes of secrets in a text the collector never saw: argv, NAME=value, a printed mapping, a URL, a token.
    ("ran vllm serve --api-key abcd1234 --port 8000", (), "ran vllm serve --api-key %s --port 8000" % HIDDEN),
    ("['--api-key', 'abcd1234']", (), "['--api-key', '%s']" % HIDDEN),
    ("HF_TOKEN=hub-token-1 NCCL_DEBUG=INFO", (), "HF_TOKEN=%s NCCL_DEBUG=INFO" % HIDDEN),
    ("{'VLLM_API_KEY': 'the-key-1'}", (), "{'VLLM_API_KEY': '%s'}" % HIDDEN),
    ("HF_TOKEN: hub-token-2", (), "HF_TOKEN: %s" % HIDDEN),
    ("https://bob:pw-1234@h.example/m.tgz?sig=s1g-value", (), "https://%s@h.example/m.tgz?sig=%s" % (HIDDEN, HIDDEN)),
    ("the token was hf_abcdefghij1234", (), "the token was %s" % HIDDEN),
])
def test_a_secret_is_hidden_wherever_it_appears(value, secrets, shown):
    assert redaction.redact(value, secrets) == shown


@pytest.mark.parametrize("value", [
    {"api_key": "none", "api_key_optout_reason": "a lab with no other users"},
    {"api_key_file": "/etc/sparkfleet/vllm/a.env", "ray_auth_token_file": "/etc/sparkfleet/ray/token",
     "RAY_AUTH_TOKEN_PATH": "/etc/sparkfleet/ray/token", "vllm_service_secrets_dir": "/etc/sparkfleet/vllm"},
    ["--max-num-batched-tokens", "8192", "--port", "8000"],
    "spark-1: sparkfleet_models[0] (qwen3-8b).max_num_batched_tokens=2048: below 2128",
    {"secret": True, "path": "/etc/x", "mode": "0600"},
])
def test_what_is_no_secret_is_shown_as_it_is(value):
    """Where a secret is kept, why an endpoint is open, the choice 'none', a count of tokens: shown unchanged."""
    assert redaction.redact(value, redaction.secret_values(value)) == value


def test_short_and_common_values_are_never_searched_for_in_other_text():
    secrets = redaction.secret_values({"vllm_service_api_key": "abc", "hf_token": "none", "token": True})
    assert secrets == set()
    assert redaction.redact_text("spark-1: abc none True", {"abc", "none"}) == "spark-1: abc none True"


def test_the_collector_finds_every_kind_of_secret():
    data = {
        "no_log_named": "by-spec-value",
        "sparkfleet_hf_token": "by-name-value",
        "env": {"VLLM_API_KEY": "env-key-value", "OTHER": "hf_shapedvalue1234"},
        "argv": ["--api-key", "argv-next-value", "--hf-token=argv-eq-value"],
        "text": "serve --token text-flag-value HF_TOKEN=text-assign-value",
        "url": "https://u:url-pass-value@h/x?token=url-param-value",
        "deep": [{"source": {"token": ["deep-list-value"]}}],
    }
    assert redaction.secret_values(data, names=("no_log_named",)) >= {
        "by-spec-value", "by-name-value", "env-key-value", "hf_shapedvalue1234", "argv-next-value", "argv-eq-value",
        "text-flag-value", "text-assign-value", "url-pass-value", "url-param-value", "deep-list-value"}


def test_every_secret_variable_and_key_is_planted_in_the_case():
    """The case holds a planted value for every variable a role marks no_log and every secret key of a model entry,
    so a new secret variable fails here until the case plants it too."""
    with open(os.path.join(PLANTED, "group_vars", "sparks.yml")) as handle:
        planted = yaml.safe_load(handle)
    with open(os.path.join(PLANTED, "host_vars", "spark-1.yml")) as handle:
        entries = yaml.safe_load(handle)["sparkfleet_models"]
    no_log = set(name for options in ROLE_SPECS.values() for name, spec in options.items() if (spec or {}).get("no_log"))
    assert no_log and no_log <= set(planted), no_log - set(planted)
    entry_secrets = set(key for key, rule in MODEL_ENTRY_SPEC.items() if rule.get("secret"))
    assert all(any(key in entry for entry in entries) for key in entry_secrets), entry_secrets


def _planted_fleet():
    names = set(name for options in ROLE_SPECS.values() for name in options) | set(fleet_plan.PLAN_INPUTS)
    with open(os.path.join(PLANTED, "group_vars", "sparks.yml")) as handle:
        names |= set(yaml.safe_load(handle))
    names |= {"sparkfleet_fabric_subnet", "sparkfleet_fabric_address", "group_names"}
    return load_fleet(os.path.join(PLANTED, "hosts.yml"), sorted(names))


def _plants():
    found = set()
    for root, _dirs, files in os.walk(PLANTED):
        for name in files:
            with open(os.path.join(root, name)) as handle:
                found.update(PLANT.findall(handle.read()))
    return found


def test_the_planted_inventory_is_refused_without_showing_a_secret():
    fleet = _planted_fleet()
    plants = _plants()
    assert len(plants) == 20
    # Every planted value is a secret the run knows.
    assert plants <= fp.fleet_secrets(fleet, ROLE_SPECS), plants - fp.fleet_secrets(fleet, ROLE_SPECS)
    plan, findings = fp.judge_fleet(fleet, ROLE_SPECS, fleet_checks(os.path.join(TOP, "roles")))
    assert plan is None
    text = "\n".join(str(f) for f in findings) + repr([f.as_dict() for f in findings])
    assert PLANT.findall(text) == []
    # The refusals that quote a larger value show it, with the secret hidden inside.
    assert "extra_args=['--api-key', '(hidden)']" in text
    assert "'token': '(hidden)'" in text
    # The role's own check (lookup setting_problems) prints through the same redaction.
    for host, host_vars in fleet.items():
        for role in role_settings.roles():
            settings = dict((name, host_vars[name]) for name in role_settings.variables(role) if name in host_vars)
            lines = [role_settings.message(host, p, settings) for p in role_settings.problems(role, settings)]
            assert PLANT.findall("\n".join(lines)) == []


def test_the_refusals_of_main_showed_the_secret_inside_a_larger_value():
    """What the redaction is for: the unredacted findings of the same inventory quote planted secrets (inside a list,
    a mapping); judge_fleet's do not."""
    fleet = _planted_fleet()
    raw = fp.check_models(fleet, fleet_checks(os.path.join(TOP, "roles"))["entry_check"],
                          lambda *a: None, {"ceiling": 0.9, "default": 0.8})
    assert set(PLANT.findall("\n".join(str(f) for f in raw))) >= {"plnt-M-argv-3c4v", "plnt-L-source-token-1a2s"}


def test_the_fleet_table_and_the_heartbeat_print_through_the_redaction():
    line = fleet_table.failure_line("spark-1", "Start vLLM", {"msg": "vllm serve --api-key run-known-1 failed: "
                                                                     "HF_TOKEN=by-shape-2"}, secrets={"run-known-1"})
    assert "run-known-1" not in line and "by-shape-2" not in line and line.startswith("spark-1: Start vLLM: ")
    beat = progress.heartbeat_line("Fetch https://u:pw-in-url-3@h/x.tgz", 0, 61, {"spark-1"})
    assert "pw-in-url-3" not in beat
