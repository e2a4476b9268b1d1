# -*- coding: utf-8 -*-
"""The action of sparkfleet.gb10.host_files renders a role's templates and reads its files on the controller,
so a role's file list can be plain data: a real ansible-playbook run of a small role against this machine."""

import json
import os
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))

TASKS = """
- name: Settle the role's files
  sparkfleet.gb10.host_files:
    files: "{{ demo_files }}"
  register: demo_result
- name: Keep what the module said
  ansible.builtin.copy:
    content: "{{ demo_result | to_json }}"
    dest: "{{ demo_out }}/result.json"
    mode: "0600"
  check_mode: false
"""

PLAY = """
- name: A role whose file list is data
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    demo_greeting: hello
  roles:
    - role: demo
"""


def _run(tmp_path, files, check=False):
    role = tmp_path / "roles" / "demo"
    (role / "tasks").mkdir(parents=True, exist_ok=True)
    (role / "templates").mkdir(exist_ok=True)
    (role / "files").mkdir(exist_ok=True)
    (role / "tasks" / "main.yml").write_text(TASKS)
    (role / "templates" / "unit.j2").write_text("{{ demo_greeting }} {{ item.name }}\n")
    (role / "files" / "helper.py").write_text("print('as it is')\n\n")
    (tmp_path / "play.yml").write_text(PLAY)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)

    extra = json.dumps({"demo_files": files, "demo_out": str(out)})
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
               ANSIBLE_ROLES_PATH=str(tmp_path / "roles"))
    cmd = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", "localhost,", str(tmp_path / "play.yml"),
           "-e", extra, "-e", "ansible_python_interpreter=" + os.path.join(REPO, ".venv", "bin", "python")] + (["--check"] if check else [])
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env, check=False)
    result = out / "result.json"
    return proc, (json.loads(result.read_text()) if result.exists() and proc.returncode == 0 else None)


def test_template_and_role_file_become_the_content(tmp_path):
    target = tmp_path / "target"
    files = [{"path": str(target), "state": "directory", "mode": "0755"},
             {"path": str(target / "a.service"), "template": "unit.j2", "template_vars": {"item": {"name": "qwen"}},
              "mode": "0644"},
             {"path": str(target / "helper.py"), "role_file": "helper.py", "mode": "0755"}]
    proc, result = _run(tmp_path, files)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert (target / "a.service").read_text() == "hello qwen\n"
    # Read as it is: the file lookup's default would strip the trailing blank line.
    assert (target / "helper.py").read_text() == "print('as it is')\n\n"
    assert oct((target / "helper.py").stat().st_mode & 0o777) == "0o755"
    assert result["changed_paths"] == [str(target), str(target / "a.service"), str(target / "helper.py")]
    proc, result = _run(tmp_path, files)
    assert proc.returncode == 0
    assert result["changed_paths"] == [] and not result["changed"]


def test_check_mode_renders_and_writes_nothing(tmp_path):
    target = tmp_path / "target.conf"
    proc, result = _run(tmp_path, [{"path": str(target), "template": "unit.j2",
                                    "template_vars": {"item": {"name": "x"}}}], check=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert result["changed_paths"] == [str(target)]
    assert not target.exists()


@pytest.mark.parametrize("entry, words", [
    ({"template": "unit.j2", "content": "x"}, "give one of content, template and role_file (it has content, template)"),
    ({"template": "unit.j2", "role_file": "helper.py"}, "(it has template, role_file)"),
    ({"role_file": "helper.py", "state": "directory"}, "role_file needs state file (it has state directory)"),
    ({"template": "missing.j2"}, "missing.j2"),
])
def test_an_entry_that_cannot_be_rendered_fails_before_the_host_is_touched(tmp_path, entry, words):
    target = tmp_path / "never"
    first = tmp_path / "first"
    proc = _run(tmp_path, [{"path": str(first), "content": "x\n"}, dict(entry, path=str(target))])[0]
    assert proc.returncode != 0
    assert words in proc.stdout
    assert not first.exists() and not target.exists()
