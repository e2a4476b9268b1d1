# -*- coding: utf-8 -*-
"""Child processes of the module tests get the whole ansible package.

``ansible-test units`` runs the tests under plugins/modules with PYTHONPATH first
on a directory whose ``ansible`` package holds only module_utils (what a host
has). The end-to-end tests here also start ``ansible`` and ``ansible-playbook``,
which inherit PYTHONPATH and then cannot import ``ansible.cli``. This drops that
directory from the environment the children inherit; the tests themselves keep
the cut-down package they were started with. Under plain pytest no such
directory is on PYTHONPATH and nothing changes.
"""

import os


def _cut_down_ansible(path):
    return os.path.isdir(os.path.join(path, "ansible")) and not os.path.isdir(os.path.join(path, "ansible", "cli"))


if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in os.environ["PYTHONPATH"].split(os.pathsep) if p and not _cut_down_ansible(p))
