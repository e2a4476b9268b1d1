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


QUICK = ("Quick task", '"true"')
SLOW = ("Slow task", "sleep 5")
TASK = """
    - name: %s
      ansible.builtin.command: %s
      changed_when: false"""


def _run(tmp_path, interval, *tasks):
    """The output of a play on localhost of ``tasks`` (name and command each), with the callback's ``interval``."""
    playbook = "- name: Progress\n  hosts: localhost\n  gather_facts: false\n  tasks:" + "".join(TASK % t for t in tasks)
    proc = local_playbook(tmp_path, playbook + "\n", env={"SPARKFLEET_PROGRESS_INTERVAL": str(interval)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_a_real_run_prints_heartbeats_naming_the_task_still_running(tmp_path):
    """Wiring, not timing: the slow task lasts at least five intervals on any machine, so it gets a heartbeat; on a
    busy machine the quick one may get one too, which is right. That a task ending within the interval gets none is
    proven with a clock of the test's own (above, and below for the callback's loop)."""
    out = _run(tmp_path, 1, QUICK, SLOW)
    beats = [line for line in out.splitlines() if line.startswith("... still running after")]
    assert any(line.endswith(": Slow task [localhost]") for line in beats), out
    assert all(line.endswith((": Slow task [localhost]", ": Quick task [localhost]")) for line in beats), beats


def test_nothing_is_printed_when_tasks_finish_within_the_interval(tmp_path):
    out = _run(tmp_path, 3600, QUICK)
    assert "still running" not in out


class Ticks:
    """The callback's stop event, driven by the test's clock: each wait() moves the clock by the interval and
    runs ``between`` (what the play does meanwhile); set after ``rounds`` waits."""

    def __init__(self, clock, rounds, between):
        self.clock, self.rounds, self.between = clock, rounds, between

    def wait(self, interval):
        self.clock.now += interval
        self.between(self.clock.now)
        self.rounds -= 1
        return self.rounds < 0


def test_the_callback_loop_beats_once_an_interval_only_while_a_task_waits():
    clock = Clock()
    callback = progress.CallbackModule()
    callback.tracker = progress.Tracker(clock=clock)
    callback._interval = 60.0
    shown = []
    callback._display = type("Display", (), {"display": staticmethod(shown.append)})()
    tracker = callback.tracker
    tracker.start_task("Quick")
    tracker.start_host("spark-1")

    def play(now):
        if now == 1060.0:    # the quick task ended within its first interval, the slow one started
            tracker.end_host("spark-1")
            tracker.start_task("Slow")
            tracker.start_host("spark-1")
        elif now == 1300.0:  # after 4 intervals the slow one ended too
            tracker.end_host("spark-1")

    callback._stop = Ticks(clock, 6, play)
    callback._beat()
    assert shown == ["... still running after 1m00s: Slow [spark-1]", "... still running after 2m00s: Slow [spark-1]",
                     "... still running after 3m00s: Slow [spark-1]"]
