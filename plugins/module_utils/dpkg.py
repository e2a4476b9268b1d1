# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What dpkg says is installed: one query format and one reading of it, for every module that asks.

Pure Python, no Ansible imports.
"""

from __future__ import annotations

# One line per package: status abbreviation (desired, status, error), name, version.
DPKG_QUERY_FORMAT = "${db:Status-Abbrev}\t${Package}\t${Version}\n"


def query_argv(dpkg_query="dpkg-query", names=()):
    """The dpkg-query command line that prints DPKG_QUERY_FORMAT for NAMES (every package when empty). dpkg-query
    exits 1 when a name matches no package, and still prints the others."""
    return [dpkg_query, "-W", "-f", DPKG_QUERY_FORMAT] + list(names)


def parse_dpkg_query(text):
    """``dpkg-query -W -f DPKG_QUERY_FORMAT`` -> ({name: version}, [held names]) of the installed packages
    (second status letter ``i``, held ``hi`` included); held: the desired state is ``h`` (dpkg --set-selections
    hold)."""
    packages, held = {}, []
    for line in (text or "").splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and len(fields[0]) >= 2 and fields[0][1] == "i":
            packages[fields[1]] = fields[2]
            if fields[0][0] == "h":
                held.append(fields[1])
    return packages, sorted(held)
