# -*- coding: utf-8 -*-
"""venv_pip_args and venv_install_stamp: pip's arguments of the vllm_venv install and the stamp it is kept with.
The stamp must stay the sum earlier releases wrote (a host whose inputs did not change must not run pip again after
an upgrade of the collection): each case is also summed by the Jinja those releases computed it with."""

import hashlib

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.sparkfleet.gb10.plugins.filter.venv_install import venv_install_stamp, venv_pip_args

# roles/vllm_venv/vars/main.yml before the filters (the pip arguments, and the stamp over the lists' content).
OLD_PIP_ARGS = """{{ (['--no-index', '--find-links', vllm_venv_wheelhouse] if vllm_venv_wheelhouse | length > 0 else [])
     + (['--index-url', vllm_venv_index_url] if vllm_venv_index_url | length > 0 else [])
     + (vllm_venv_extra_index_urls | map('regex_replace', '^', '--extra-index-url=') | list)
     + (['--require-hashes'] if _vllm_venv_locked else [])
     + (['-c', vllm_venv_constraints_file] if vllm_venv_constraints_file | length > 0 else [])
     + vllm_venv_pip_extra_args }}"""
OLD_STAMP = """{{ ((_vllm_venv_requirement_lists | map(attribute='content') | map('hash', 'sha256') | list)
      + (__vllm_venv_inputs.files | default([]) | map(attribute='sha256') | map('default', 'missing', true) | list)
      + _vllm_venv_pip_args + [vllm_venv_path]) | join('|') | hash('sha256') }}"""

SETTINGS = [
    dict(wheelhouse="", index_url="", extra_index_urls=[], locked=False, constraints="", extra=[]),
    dict(wheelhouse="", index_url="", extra_index_urls=[], locked=True, constraints="", extra=[]),
    dict(wheelhouse="/srv/wheels", index_url="https://pypi.example/simple",
         extra_index_urls=["https://a.example/x", "https://b.example/y"], locked=True, constraints="/etc/c.txt",
         extra=["--no-cache-dir", "-v"]),
]


def _old(expression, **variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


def _pip(settings):
    return venv_pip_args(settings["wheelhouse"], index_url=settings["index_url"],
                         extra_index_urls=settings["extra_index_urls"], require_hashes=settings["locked"],
                         constraints_file=settings["constraints"], extra_args=settings["extra"])


def test_pip_args_in_their_order():
    assert _pip(SETTINGS[0]) == []
    assert _pip(SETTINGS[1]) == ["--require-hashes"]
    assert _pip(SETTINGS[2]) == ["--no-index", "--find-links", "/srv/wheels", "--index-url", "https://pypi.example/simple",
                                 "--extra-index-url=https://a.example/x", "--extra-index-url=https://b.example/y",
                                 "--require-hashes", "-c", "/etc/c.txt", "--no-cache-dir", "-v"]
    assert venv_pip_args("", require_hashes="no") == [] and venv_pip_args("", require_hashes="yes") == ["--require-hashes"]


@pytest.mark.parametrize("settings", SETTINGS)
def test_pip_args_are_what_the_role_computed_before(settings):
    old = _old(OLD_PIP_ARGS, vllm_venv_wheelhouse=settings["wheelhouse"], vllm_venv_index_url=settings["index_url"],
               vllm_venv_extra_index_urls=settings["extra_index_urls"], _vllm_venv_locked=settings["locked"],
               vllm_venv_constraints_file=settings["constraints"], vllm_venv_pip_extra_args=settings["extra"])
    assert _pip(settings) == old


CONTENTS = ["# Ansible managed\nvllm==0.23.0\ntorch==2.11.0\n", "# Ansible managed\n", "ünïcode==1.0\n"]
HOST_FILES = [
    None,  # the checksum task skipped (no requirement files, no constraints): not registered with files
    [{"path": "/srv/r1.txt", "sha256": "ab" * 32}],
    [{"path": "/srv/r1.txt", "sha256": "ab" * 32}, {"path": "/srv/r2.txt", "sha256": None},
     {"path": "/etc/c.txt", "sha256": ""}],
]


@pytest.mark.parametrize("host_files", HOST_FILES)
@pytest.mark.parametrize("settings", SETTINGS)
def test_the_stamp_is_the_one_earlier_releases_wrote(settings, host_files):
    args, path = _pip(settings), "/opt/sparkfleet/venv"
    lists = [{"path": "/opt/sparkfleet/venv/r%d.txt" % i, "content": text} for i, text in enumerate(CONTENTS)]
    inputs = {"skipped": True} if host_files is None else {"files": host_files}
    old = _old(OLD_STAMP, _vllm_venv_requirement_lists=lists, __vllm_venv_inputs=inputs, _vllm_venv_pip_args=args,
               vllm_venv_path=path)
    assert venv_install_stamp(CONTENTS, host_files, args, path) == old


def test_the_stamp_changes_with_each_input():
    args, path, files = ["--require-hashes"], "/opt/v", [{"path": "/r", "sha256": "ab" * 32}]
    stamp = venv_install_stamp(CONTENTS, files, args, path)
    parts = [hashlib.sha256(text.encode()).hexdigest() for text in CONTENTS] + ["ab" * 32] + args + [path]
    assert stamp == hashlib.sha256("|".join(parts).encode()).hexdigest()
    others = [venv_install_stamp(CONTENTS[:1], files, args, path), venv_install_stamp(CONTENTS, [], args, path),
              venv_install_stamp(CONTENTS, [{"path": "/r", "sha256": None}], args, path),
              venv_install_stamp(CONTENTS, files, [], path), venv_install_stamp(CONTENTS, files, args, "/opt/w")]
    assert len(set(others + [stamp])) == 6
