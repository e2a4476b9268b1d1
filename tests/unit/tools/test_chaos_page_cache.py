# -*- coding: utf-8 -*-
"""tools/chaos_page_cache.py (make chaos FAULTS=page-cache-drop): what it judges a start by, and the sim's drop
command it relies on, run here for real on a file this machine caches."""

import os
import shutil
import subprocess
import sys

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import chaos  # noqa: E402
import chaos_page_cache as cpc  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import fleet_default  # noqa: E402

UNIT = "sparkfleet-vllm-tiny-tp"


def asked(monotonic, unit=UNIT, ok=True):
    return {"how": "asked", "ok": ok, "unit": unit, "monotonic": monotonic, "at": 1.0e9 + monotonic}


def local(monotonic):
    return {"how": "local", "ok": True, "unit": UNIT, "monotonic": monotonic}


def test_a_start_passes_with_one_asked_drop_between_the_fill_and_the_head_process():
    problems, drop = cpc.judge("restart", [asked(90.0), asked(105.0)], UNIT, filled=100.0, cached_before=64 << 20,
                               cached_after=0, head_started=110.0)
    assert problems == [] and drop["monotonic"] == 105.0


@pytest.mark.parametrize("entries,filled,before,after,started,started_by,words", [
    ([asked(95.0)], 100.0, 1, 0, 110.0, None, "no drop asked by the head"),            # dropped before the fill
    ([asked(111.0)], 100.0, 1, 0, 110.0, None, "no drop asked by the head"),           # after vLLM started: too late
    ([asked(105.0, unit="other")], 100.0, 1, 0, 110.0, None, "no drop asked"),         # for another model's start
    ([asked(105.0, ok=False)], 100.0, 1, 0, 110.0, None, "no drop asked"),             # a drop that failed
    ([asked(105.0)], 100.0, 0, 0, 110.0, None, "proves nothing"),                      # the fill did not fill
    ([asked(105.0)], 100.0, 1, 4096, 110.0, None, "still cached"),                     # nothing was dropped
    ([asked(105.0), local(106.0)], 100.0, 1, 0, 110.0, None, "a start of its own"),    # not the head's drop
    ([asked(105.0)], 100.0, 1, 0, 110.0, 107.0, "the timer's service"),                # before the timer fired
])
def test_a_start_fails_on_what_a_broken_drop_gets_wrong(entries, filled, before, after, started, started_by, words):
    problems, _drop = cpc.judge("p", entries, UNIT, filled, before, after, started, started_by=started_by)
    assert any(words in p for p in problems), problems


def test_fincore_output_is_summed():
    assert cpc.cached_bytes("  67108864\n") == 67108864
    assert cpc.cached_bytes("0\n4096\n") == 4096 and cpc.cached_bytes("") == 0


def test_the_fault_is_one_of_make_chaos_and_refused_only_for_want_of_a_fleet():
    assert "page-cache-drop" in chaos.FAULTS
    assert chaos.FAULTS.index("page-cache-drop") < chaos.FAULTS.index("rolling-update")  # on inventories/sim
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "chaos.py"), "--faults", "page-cache-drop"],
                          capture_output=True, text=True, check=False, env=dict(os.environ, HOME="/nonexistent"))
    assert proc.returncode != 0 and "unknown fault" not in proc.stderr


def _sim_drop_command():
    with open(os.path.join(REPO, "tests", "sim", "group_vars", "all", "vllm_cpu.yml")) as handle:
        command = yaml.safe_load(handle)["vllm_service_drop_caches_command"]
    return command.replace("{{ lookup('sparkfleet.gb10.fleet_default', 'model_store_dir') }}",
                           fleet_default("model_store_dir"))


def test_the_sims_drop_command_drops_what_the_fault_fills():
    command = _sim_drop_command()
    assert cpc.PAGE_CACHE_DIR in command and fleet_default("model_store_dir") in command
    # systemd's quoting: the units hand it on quoted, so no quote or backslash of its own
    assert not set("'\"\\") & set(command)


@pytest.mark.skipif(shutil.which("fincore") is None, reason="fincore (util-linux) is not installed")
def test_the_sims_drop_command_really_drops_the_cached_pages_of_the_ballast(tmp_path):
    """Run on this machine, its paths moved under tmp_path: a file read into the page cache is no longer cached."""
    command = _sim_drop_command()
    for path in ("/opt/sparkfleet-sim/proc/sys/vm/drop_caches", fleet_default("model_store_dir"), cpc.PAGE_CACHE_DIR):
        command = command.replace(path, str(tmp_path) + path)
    (tmp_path / "opt/sparkfleet-sim/proc/sys/vm").mkdir(parents=True)
    ballast = tmp_path / cpc.PAGE_CACHE_DIR.lstrip("/") / "ballast"
    ballast.parent.mkdir(parents=True)
    weights = tmp_path / fleet_default("model_store_dir").lstrip("/") / "tiny-tp" / "model.safetensors"
    weights.parent.mkdir(parents=True)
    for path in (ballast, weights):
        path.write_bytes(os.urandom(4 << 20))
    subprocess.run(["sh", "-c", "sync; cat %s %s > /dev/null" % (ballast, weights)], check=True)

    def cached(path):
        return cpc.cached_bytes(subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                                               capture_output=True, text=True, check=True).stdout)

    assert cached(ballast) > 0 and cached(weights) > 0
    subprocess.run(["/bin/sh", "-c", command], check=True)
    assert cached(ballast) == 0 and cached(weights) == 0
    assert (tmp_path / "opt/sparkfleet-sim/proc/sys/vm/drop_caches").read_text().strip() == "3"
