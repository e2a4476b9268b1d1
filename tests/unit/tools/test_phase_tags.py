# -*- coding: utf-8 -*-
"""tools/phase_tags.py: the phase tags come from --list-tags (a tag that starts with a role's name and `_`), and a
phase that fails alone or changes something fails the whole run. ansible-playbook is a script standing in for it."""

import io
import os
import stat
import sys
from contextlib import redirect_stdout

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import phase_tags  # noqa: E402

LISTED = """
playbook: site.yml

  play #2 (sparks): NVIDIA driver	TAGS: [driver]
      TASK TAGS: [always, driver, nvidia_driver, nvidia_driver_pin, nvidia_driver_preflight]

  play #9 (sparks): The vLLM services	TAGS: [vllm]
      TASK TAGS: [always, vllm, vllm_service, vllm_service_configure, vllm_venv_gate]
"""

# Coloured, as under Molecule (ANSIBLE_FORCE_COLOR): the recap is read without the colour codes.
RECAP = ("PLAY RECAP ***\\n\\033[0;33mspark-1\\033[0m : \\033[0;32mok=9\\033[0m changed=%s unreachable=0 failed=0 "
         "skipped=1 rescued=0 ignored=0\\n")


def test_phase_tags_are_the_roles_prefixed_ones():
    assert phase_tags.phase_tags(LISTED, ["nvidia_driver", "vllm_service", "vllm_venv"]) == [
        "nvidia_driver_pin", "nvidia_driver_preflight", "vllm_service_configure", "vllm_venv_gate"]
    # the roles' own tags, the plays' tags and `always` are not phases
    assert "vllm_service" not in phase_tags.phase_tags(LISTED, ["vllm_service"])


def test_the_roles_of_the_tree_are_found():
    assert {"nccl", "vllm_service", "ray"} <= set(phase_tags.roles())


def _fake_playbook(tmp_path):
    """An ansible-playbook that lists LISTED, fails --tags nvidia_driver_pin, changes one thing under
    --tags vllm_venv_gate and passes the rest."""
    script = tmp_path / "bin" / "ansible-playbook"
    script.parent.mkdir()
    (tmp_path / "listed.txt").write_text(LISTED)
    script.write_text("#!/bin/sh\n"
                      "case \"$*\" in\n"
                      "  *--list-tags*) cat %s ;;\n"
                      "  *nvidia_driver_pin*) echo 'fatal: [spark-1]: FAILED!'; exit 2 ;;\n"
                      "  *vllm_venv_gate*) printf '%s' 1 ;;\n"
                      "  *) printf '%s' 0 ;;\n"
                      "esac\n" % (tmp_path / "listed.txt", RECAP, RECAP))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script.parent)


def test_a_failed_or_changing_phase_fails_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _fake_playbook(tmp_path) + os.pathsep + os.environ["PATH"])
    out = io.StringIO()
    with redirect_stdout(out):
        rc = phase_tags.main([])
    text = out.getvalue()
    assert rc == 1
    assert "| nvidia_driver_pin | FAILED (rc 2) |" in text
    assert "| vllm_venv_gate | CHANGED something | spark-1=1 |" in text
    assert "| vllm_service_configure | passed | spark-1=0 |" in text
    assert "=== --tags nvidia_driver_pin (rc 2):" in text
