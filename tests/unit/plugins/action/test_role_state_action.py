# -*- coding: utf-8 -*-
"""sparkfleet.gb10.role_state through a real ansible-playbook run of a small role against this machine: a role that
ran through is confirmed in one call; a hand change, a changed setting or a failing check makes the next run a
full one, and the record is gone until the role runs through again."""

import json
import os
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))

SPECS = """
argument_specs:
  main:
    short_description: A demo
    options:
      demo_setting: {type: str, default: one}
      demo_out: {type: str, required: true}
"""

TASKS = """
- name: Confirm the role's state in one call
  sparkfleet.gb10.role_state:
    role: demo
    store: "{{ demo_out }}/state"
    inputs: {extra: "{{ demo_extra | default('') }}"}
    drift: "{{ demo_found | default([]) }}"
  register: demo_state
- name: Keep what the check said
  ansible.builtin.copy:
    content: "{{ demo_state | combine({'confirmed_fact': ansible_facts.sparkfleet_confirmed | default('none')}) | to_json }}"
    dest: "{{ demo_out }}/check.json"
    mode: "0600"
- name: Nothing else to do where converged
  ansible.builtin.meta: end_role
  when: demo_state.converged
- name: Write the managed file
  ansible.builtin.copy:
    content: "{{ demo_setting }}\\n"
    dest: "{{ demo_out }}/managed.conf"
    mode: "0644"
- name: Write the large file once
  ansible.builtin.copy:
    content: "weights\\n"
    dest: "{{ demo_out }}/weights.bin"
    mode: "0644"
    force: false
- name: Record what the role manages
  sparkfleet.gb10.role_state:
    role: demo
    state: record
    store: "{{ demo_out }}/state"
    inputs: {extra: "{{ demo_extra | default('') }}"}
    paths: ["{{ demo_out }}/managed.conf"]
    stat_paths: ["{{ demo_out }}/weights.bin"]
    packages: [bash]
    checks: [{name: health, argv: "{{ demo_check | default(['true']) }}"}]
    facts: {found: seen}
"""


def _run(tmp_path, *extra):
    role = tmp_path / "roles" / "demo"
    (role / "tasks").mkdir(parents=True, exist_ok=True)
    (role / "meta").mkdir(exist_ok=True)
    (role / "tasks" / "main.yml").write_text(TASKS)
    (role / "meta" / "argument_specs.yml").write_text(SPECS)
    (role / "defaults").mkdir(exist_ok=True)
    (role / "defaults" / "main.yml").write_text("demo_setting: one\n")
    (tmp_path / "play.yml").write_text("- hosts: localhost\n  connection: local\n  gather_facts: false\n"
                                       "  roles: [demo]\n")
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_ROLES_PATH=str(tmp_path / "roles"))
    cmd = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", "localhost,", str(tmp_path / "play.yml"),
           "-e", "ansible_python_interpreter=" + os.path.join(REPO, ".venv", "bin", "python"),
           "-e", "demo_out=" + str(out)]
    for item in extra:
        cmd += ["-e", item]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return json.loads((out / "check.json").read_text()), out


def _check_mode(tmp_path, out):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_ROLES_PATH=str(tmp_path / "roles"))
    proc = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", "localhost,",
                           str(tmp_path / "play.yml"), "--check",
                           "-e", "ansible_python_interpreter=" + os.path.join(REPO, ".venv", "bin", "python"),
                           "-e", "demo_out=" + str(out)], cwd=REPO, capture_output=True, text=True, env=env,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_converged_after_a_complete_run_hand_changes_put_right_settings_followed(tmp_path):
    first, out = _run(tmp_path)
    assert first["converged"] is False and first["drift"] == ["no record of a run that went through"]
    state = out / "state" / "demo.json"
    record = json.loads(state.read_text())
    assert oct(state.stat().st_mode & 0o777) == "0o600"
    assert sorted(record["paths"]) == [str(out / "managed.conf"), str(out / "weights.bin")]
    assert "bash" in record["packages"]
    # The large file by size and time, never read.
    weights = record["paths"][str(out / "weights.bin")]
    assert weights["size"] == 8 and "sha256" not in weights
    assert weights["mtime"] == (out / "weights.bin").stat().st_mtime_ns
    # Only a digest reaches the host: no setting in the record.
    assert "one" not in json.dumps(record).replace(str(out), "")
    assert record["facts"] == {"found": "seen"}
    # Not converged: no facts handed back, and the host fact does not name the role.
    assert first["facts"] == {} and first["checked"] == [] and first["confirmed_fact"] == {}
    second = _run(tmp_path)[0]
    assert second["converged"] is True and second["drift"] == []
    # Converged: the recorded facts come back, and the host fact names the role with the checks that passed.
    assert second["facts"] == {"found": "seen"} and second["checked"] == ["health"]
    assert second["confirmed_fact"] == {"demo": ["health"]}

    (out / "managed.conf").write_text("changed by hand\n")
    _check_mode(tmp_path, out)  # check mode removes nothing and puts nothing right
    assert state.exists() and (out / "managed.conf").read_text() == "changed by hand\n"
    third = _run(tmp_path)[0]
    assert third["converged"] is False and third["drift"] == ["%s: content changed" % (out / "managed.conf")]
    assert third["facts"] == {} and third["confirmed_fact"] == {}
    assert (out / "managed.conf").read_text() == "one\n"
    assert _run(tmp_path)[0]["converged"] is True

    changed = _run(tmp_path, "demo_setting=two")[0]
    assert changed["drift"] == ["the role's inputs or code changed since it last ran through"]
    assert (out / "managed.conf").read_text() == "two\n"
    assert _run(tmp_path, "demo_setting=two", "demo_extra=x")[0]["converged"] is False


def test_a_failing_check_is_drift(tmp_path):
    _run(tmp_path, '{"demo_check": ["false"]}')
    failing, out = _run(tmp_path, '{"demo_check": ["false"]}')
    assert failing["drift"] == ["check health failed (rc 1)"]
    assert (out / "state" / "demo.json").exists()  # written again by the full run


def test_a_large_file_touched_is_drift(tmp_path):
    _run(tmp_path)
    out = tmp_path / "out"
    os.utime(out / "weights.bin", ns=(1, 1))
    touched = _run(tmp_path)[0]
    assert touched["drift"] == ["%s: content changed" % (out / "weights.bin")]
    assert _run(tmp_path)[0]["converged"] is True


def test_what_the_role_found_itself_is_drift_and_every_drift_is_named_in_one_line(tmp_path):
    """A difference the role read before the check (fabric_firewall: a live table that is not the planned one) makes
    the host not converged like any other; the check's own result then names the host, the role and each difference
    (no debug task after it), and hands back no facts and no confirmation."""
    _run(tmp_path)
    converged = _run(tmp_path)[0]
    assert converged["converged"] is True and "msg" not in converged
    found = _run(tmp_path, '{"demo_found": ["the live table is not the planned one"]}')[0]
    assert found["converged"] is False and found["drift"] == ["the live table is not the planned one"]
    assert found["msg"] == "localhost: demo runs in full: the live table is not the planned one"
    assert found["facts"] == {} and found["confirmed_fact"] == {}
    (tmp_path / "out" / "managed.conf").write_text("changed by hand\n")
    both = _run(tmp_path)[0]
    assert both["msg"] == "localhost: demo runs in full: %s: content changed" % (tmp_path / "out" / "managed.conf")
