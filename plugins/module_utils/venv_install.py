# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the vllm_venv role hands pip and how it knows an install is still current: pip's arguments from the role's
index settings, and the stamp of an install (a sha256 over what it was made of). Pure Python behind the filters
``venv_pip_args`` and ``venv_install_stamp`` (plugins/filter/venv_install.py)."""

from __future__ import annotations

import hashlib

from ansible.module_utils.common.text.converters import to_bytes


def pip_args(wheelhouse="", index_url="", extra_index_urls=(), require_hashes=False, constraints_file="",
             extra_args=()):
    """pip's arguments, in this order: a wheelhouse (``--no-index --find-links``), the index, each extra index,
    ``--require-hashes``, the constraints file (``-c``), then ``extra_args`` as given."""
    args = []
    if wheelhouse:
        args += ["--no-index", "--find-links", wheelhouse]
    if index_url:
        args += ["--index-url", index_url]
    args += ["--extra-index-url=%s" % url for url in extra_index_urls or ()]
    if require_hashes:
        args.append("--require-hashes")
    if constraints_file:
        args += ["-c", constraints_file]
    return args + list(extra_args or ())


def _sha256(text):
    return hashlib.sha256(to_bytes(text, errors="surrogate_or_strict")).hexdigest()


def install_stamp(contents, host_files, args, path):
    """The sha256 (hex) an install is stamped with: over the sha256 of each requirement list's ``contents``, of each
    file of the host it reads (start_inputs' ``files``: its ``sha256``, ``missing`` for one that is not there), pip's
    ``args`` and the virtualenv's ``path``, joined with ``|``. Stamps written by earlier releases (the same sum,
    computed in Jinja) stay valid."""
    parts = [_sha256(text) for text in contents]
    parts += [(entry or {}).get("sha256") or "missing" for entry in host_files or ()]
    parts += [str(arg) for arg in args or ()] + [str(path)]
    return _sha256("|".join(parts))
