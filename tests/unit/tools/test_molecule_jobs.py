# -*- coding: utf-8 -*-
"""tools/molecule_jobs.py: scenarios longest first, JOBS at a time, each log printed whole, no new start after a
failure. The scenarios are short shell commands standing in for `molecule test -s NAME`."""

import io
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import molecule_jobs  # noqa: E402


def scripted(tmp_path, scripts):
    """A command for Jobs: each scenario runs its shell script, with MARK a directory the scripts may use."""
    def command(name):
        return ["/bin/sh", "-c", scripts[name].replace("MARK", str(tmp_path))]
    return command


def test_longest_first_and_unknown_ones_before_all(monkeypatch):
    assert molecule_jobs.order(["host_facts", "site", "brand_new", "cluster", "site"]) == [
        "brand_new", "site", "cluster", "host_facts"]


def test_every_scenario_of_the_tree_has_a_typical_time():
    scenarios = sorted(name for name in os.listdir(os.path.join(REPO, "molecule"))
                       if os.path.isfile(os.path.join(REPO, "molecule", name, "molecule.yml")))
    assert scenarios and sorted(molecule_jobs.TYPICAL_SECONDS) == scenarios


def test_two_at_a_time_and_each_log_printed_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(molecule_jobs, "LOGS", str(tmp_path / "logs"))
    # site waits until cluster has started: only two running side by side lets both finish.
    scripts = {
        "site": "echo site-1; i=0; while [ ! -e MARK/cluster ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; "
                "[ -e MARK/cluster ] && echo site-2",
        "cluster": "touch MARK/cluster; echo cluster-1; sleep 0.2; echo cluster-2",
        "driver": "echo driver-1",
    }
    out = io.StringIO()
    jobs = molecule_jobs.Jobs(list(scripts), 2, command=scripted(tmp_path, scripts), out=out)
    jobs.run()
    text = out.getvalue()
    assert not jobs.failed and sorted(result[0] for result in jobs.results) == ["cluster", "driver", "site"]
    # Each scenario's lines come together, between its own header and its verdict.
    for name, lines in (("site", ["site-1", "site-2"]), ("cluster", ["cluster-1", "cluster-2"]), ("driver", ["driver-1"])):
        block = text.split("=== molecule test -s %s: output\n" % name)[1].split("=== molecule test -s %s: passed" % name)[0]
        assert block.split() == lines
    assert (tmp_path / "logs" / "site.log").read_text().split() == ["site-1", "site-2"]


def test_one_at_a_time_would_not_have_met(tmp_path, monkeypatch):
    monkeypatch.setattr(molecule_jobs, "LOGS", str(tmp_path / "logs"))
    scripts = {"site": "i=0; while [ ! -e MARK/cluster ] && [ $i -lt 10 ]; do sleep 0.05; i=$((i+1)); done; "
                       "[ -e MARK/cluster ]",
               "cluster": "touch MARK/cluster"}
    jobs = molecule_jobs.Jobs(list(scripts), 1, command=scripted(tmp_path, scripts), out=io.StringIO())
    jobs.run()
    assert jobs.failed and [result[0] for result in jobs.results if result[1]] == ["site"]


def test_after_a_failure_nothing_new_starts_and_the_exit_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(molecule_jobs, "LOGS", str(tmp_path / "logs"))
    scripts = {"site": "echo broken; exit 3", "cluster": "touch MARK/cluster-ran", "driver": "touch MARK/driver-ran"}
    out = io.StringIO()
    jobs = molecule_jobs.Jobs(list(scripts), 1, command=scripted(tmp_path, scripts), out=out)
    jobs.run()
    summary = jobs.summary(1.0)
    assert jobs.failed and [result[0] for result in jobs.results] == ["site"]
    assert not (tmp_path / "cluster-ran").exists() and not (tmp_path / "driver-ran").exists()
    assert "FAILED (rc 3)" in out.getvalue() and "broken" in out.getvalue()
    assert "| cluster | not started (an earlier one failed) | |" in summary


def test_a_command_that_cannot_start_is_a_failure_not_an_empty_pass(tmp_path, monkeypatch):
    """molecule not on PATH (the tool run outside make): the worker used to die and the run passed with 0 scenarios."""
    monkeypatch.setattr(molecule_jobs, "LOGS", str(tmp_path / "logs"))
    out = io.StringIO()
    jobs = molecule_jobs.Jobs(["site"], 1, command=lambda name: [str(tmp_path / "no-such-molecule"), name], out=out)
    jobs.run()
    assert jobs.failed and jobs.results[0][:2] == ("site", 127)
    assert "FAILED (rc 127)" in out.getvalue() and "No such file" in out.getvalue()


def test_scenarios_side_by_side_do_not_install_the_collection_each():
    """Molecule's prerun installs this collection into ~/.ansible/collections at every start; two scenarios started
    together raced there (FileExistsError from ansible-galaxy, a scenario failed in 3 s in CI). The shared config turns
    it off, and the link it would stand in for is in the tree."""
    import yaml
    with open(os.path.join(REPO, ".config", "molecule", "config.yml")) as handle:
        config = yaml.safe_load(handle)
    assert config["prerun"] is False
    link = os.path.join(REPO, "collections", "ansible_collections", "sparkfleet", "gb10")
    assert os.path.islink(link) and os.path.samefile(link, REPO)
    assert config["ansible"]["env"]["ANSIBLE_COLLECTIONS_PATH"] == "${MOLECULE_PROJECT_DIRECTORY}/collections"


def test_the_summary_ends_with_where_a_failed_scenario_stopped(tmp_path, monkeypatch):
    """CI keeps the tail of a run only: the failed task of the failed scenario has to be under the table, not an
    ignored failure before it, and an idempotence verdict counts as where it stopped."""
    monkeypatch.setattr(molecule_jobs, "LOGS", str(tmp_path / "logs"))
    log = ("TASK [an expected refusal] ***\n\x1b[0;31mfatal: [h1]: FAILED! => {\"msg\": \"refused\"}\x1b[0m\n...ignoring\n"
           "TASK [Check the resumed shard] ***\nok: [h2]\nfatal: [h1]: FAILED! => {\"msg\": \"sizes differ\"}\n"
           "PLAY RECAP ***\nh1 : ok=3 failed=1\n")
    scripts = {"models": "printf '%s'; exit 2" % log.replace("%", "%%"), "network": "echo fine"}
    jobs = molecule_jobs.Jobs(list(scripts), 1, command=scripted(tmp_path, scripts), out=io.StringIO())
    jobs.run()
    shown = os.path.relpath(str(tmp_path / "logs" / "models.log"), molecule_jobs.TOP)
    tail = jobs.summary(1.0).split("=== where models stopped (%s):\n" % shown)[1].splitlines()
    assert tail[0] == "TASK [Check the resumed shard] ***" and "sizes differ" in tail[2] and "failed=1" in tail[-1]
    assert not any("\x1b" in line or "refused" in line for line in tail)
    assert "where network stopped" not in jobs.summary(1.0)


def test_an_idempotence_verdict_is_where_it_stopped(tmp_path):
    path = tmp_path / "updates.log"
    path.write_text("fatal: [h1]: FAILED! => early, ignored\n...ignoring\nTASK [x] ***\nok: [h1]\n"
                    "CRITICAL Idempotence test failed because of the following tasks:\n*  => role : Write the unit\n")
    assert molecule_jobs.excerpt(str(path)) == ["CRITICAL Idempotence test failed because of the following tasks:",
                                                "*  => role : Write the unit"]
