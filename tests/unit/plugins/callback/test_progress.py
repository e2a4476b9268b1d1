# -*- coding: utf-8 -*-
"""The progress callback: a heartbeat line while a task still waits for hosts, silence otherwise."""

from ansible_collections.sparkfleet.gb10.plugins.callback import progress

from ansible_local import local_playbook  # tests/unit/ansible_local.py


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_elapsed_text():
    assert progress.elapsed_text(45) == "45s"
    assert progress.elapsed_text(245) == "4m05s"
    assert progress.elapsed_text(3723) == "1h02m03s"


def test_tracker_names_the_task_the_pending_hosts_and_the_time():
    clock = Clock()
    tracker = progress.Tracker(clock=clock)
    assert tracker.line() is None  # no task yet
    tracker.start_task("Build NCCL v2.28.9-1 for sm_121")
    tracker.start_host("spark-2")
    tracker.start_host("spark-1")
    clock.now += 59
    assert tracker.line(min_elapsed=60) is None  # too early
    clock.now += 181
    assert tracker.line(min_elapsed=60) == "... still running after 4m00s: Build NCCL v2.28.9-1 for sm_121 [spark-1, spark-2]"
    tracker.end_host("spark-1")
    assert tracker.line(min_elapsed=60).endswith("[spark-2]")
    tracker.end_host("spark-2")
    assert tracker.line(min_elapsed=60) is None  # every host answered


def test_a_new_task_restarts_the_clock_and_forgets_the_hosts():
    clock = Clock()
    tracker = progress.Tracker(clock=clock)
    tracker.start_task("one")
    tracker.start_host("spark-1")
    clock.now += 300
    tracker.start_task("two")
    tracker.start_host("spark-2")
    clock.now += 61
    assert tracker.line(min_elapsed=60) == "... still running after 1m01s: two [spark-2]"
    tracker.stop()
    assert tracker.line() is None


def _run(playbook_text, tmp_path, interval):
    proc = local_playbook(tmp_path, playbook_text, env={"SPARKFLEET_PROGRESS_INTERVAL": str(interval)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_a_real_run_prints_heartbeats_for_a_long_task_only(tmp_path):
    out = _run("""
- name: Progress
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Quick task
      ansible.builtin.command: "true"
      changed_when: false
    - name: Slow task
      ansible.builtin.command: sleep 5
      changed_when: false
""", tmp_path, interval=1)
    beats = [line for line in out.splitlines() if line.startswith("... still running after")]
    assert beats, out
    assert all(line.endswith(": Slow task [localhost]") for line in beats), beats


def test_nothing_is_printed_when_tasks_finish_within_the_interval(tmp_path):
    out = _run("""
- name: Progress
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Quick task
      ansible.builtin.command: "true"
      changed_when: false
""", tmp_path, interval=30)
    assert "still running" not in out
