# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters venv_pip_args and venv_install_stamp (documented in venv_pip_args.yml and venv_install_stamp.yml beside
this file); the logic is plugins/module_utils/venv_install.py."""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.sparkfleet.gb10.plugins.module_utils import venv_install as impl


def venv_pip_args(wheelhouse, index_url="", extra_index_urls=None, require_hashes=False, constraints_file="",
                  extra_args=None):
    return impl.pip_args(wheelhouse, index_url, extra_index_urls or [], boolean(require_hashes, strict=False),
                         constraints_file, extra_args or [])


def venv_install_stamp(contents, host_files=None, pip_args=None, path=""):
    return impl.install_stamp(list(contents), host_files or [], pip_args or [], path)


class FilterModule(object):

    def filters(self):
        return {"venv_pip_args": venv_pip_args, "venv_install_stamp": venv_install_stamp}
