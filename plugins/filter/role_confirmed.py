# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter role_confirmed (documented in role_confirmed.yml beside this file); the reader of the fact is
plugins/module_utils/role_state.py, host_confirmations."""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.module_utils import role_state


def role_confirmed(hostvars, host, role):
    return role in role_state.host_confirmations(hostvars, host)


class FilterModule(object):

    def filters(self):
        return {"role_confirmed": role_confirmed}
