# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the lookups that return a value for each name they are given, from one table of the collection, have in
common: sparkfleet.gb10.fleet_default (plugins/module_utils/fleet_defaults.py) and sparkfleet.gb10.rulebook
(plugins/module_utils/rulebook.py). Each documents its own names (``_terms``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):  # pylint: disable=too-few-public-methods

    DOCUMENTATION = r"""
options: {}
notes:
  - An unknown name fails and lists the known names.
"""
