# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter package_name; its function is in plugins/filter/missing_packages.py.

A file of its own gives it its own documentation: ansible-doc reads a filter's documentation
from the file that registers it."""
from __future__ import annotations

DOCUMENTATION = r"""
name: package_name
author: sparkfleet.gb10 developers
short_description: The package an apt entry names
version_added: 0.1.0
description:
- The Debian package name at the start of an entry as C(apt) takes it (C(name), C(name=version), C(name=1.2*), C(name:arch),
  C(name>=1.0)), or of each entry of a list.
- Read with the same pattern as C(sparkfleet.gb10.missing_packages), so both agree on which package an entry is.
- Fails naming the entry when it does not start with a package name.
options:
  _input:
    description: One apt entry, or a list of them.
    type: raw
    required: true
"""

EXAMPLES = r"""
_names: "{{ nvidia_driver_packages | sparkfleet.gb10.package_name }}"
# ['nvidia-driver-580-open=580.142*', 'nvidia-utils-580:arm64'] -> ['nvidia-driver-580-open', 'nvidia-utils-580']
"""

RETURN = r"""
_value:
  description: The name, or the list of names in the given order.
  type: raw
"""

from ansible_collections.sparkfleet.gb10.plugins.filter.missing_packages import package_name


class FilterModule(object):

    def filters(self):
        return {"package_name": package_name}
