#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Settle a role's directories, files and links on a host in one call."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: host_files
short_description: Settle several directories, files and links in one call, each reported on its own
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
  - sparkfleet.gb10.attributes.files
description:
  - Brings every entry of O(files) to its state, in the order given, and says which ones it changed.
  - One module call for a role's files, where M(ansible.builtin.template) and M(ansible.builtin.copy) make two
    calls for each file that is already right (a stat to compare checksums, then the file module for owner, group
    and mode) and M(ansible.builtin.file) one for each directory. The content of a template comes from
    C(lookup('ansible.builtin.template', ...)) in the task, rendered on the controller as the template action does.
  - A file is written to a temporary file in its own directory, with its owner, group and mode set before
    anything can read it, checked with its O(files[].validate) command if it has one, and renamed over the
    old one; a file that fails its check is never put in place, and the entries after it are left alone.
  - Entries are settled in order, so a directory comes before the files in it, and a program written by an
    entry can check the entries after it.
options:
  files:
    description: What to settle, in order.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Absolute path of the directory, file or link.
        type: path
        required: true
      state:
        description:
          - V(file) writes O(files[].content); V(directory) creates the directory (and missing parents, which
            get mode 0755 and root's ownership), and follows a link to a directory that is in its place; V(link) points a
            symbolic link at O(files[].src) (it replaces a
            link, never a file or directory); V(absent) removes a file or link (never a directory).
        type: str
        choices: [file, directory, link, absent]
        default: file
      content:
        description: The file's content (O(files[].state=file)).
        type: str
      template:
        description:
          - A template of the role, rendered on the controller (by the module's action plugin, as
            C(lookup('ansible.builtin.template')) renders it) into the file's content, in place of O(files[].content).
        type: str
      template_vars:
        description: More variables for O(files[].template) (the lookup's C(template_vars)).
        type: dict
      role_file:
        description:
          - A file of the role's C(files/), read on the controller as it is into the file's content, in place of
            O(files[].content).
        type: str
      src:
        description: The target of the link (O(files[].state=link)).
        type: str
      owner:
        description: Owner (name or number); left as it is when omitted.
        type: str
      group:
        description: Group (name or number); left as it is when omitted.
        type: str
      mode:
        description: Octal mode, such as V('0644'); a new file without one gets 0644, a new directory 0755.
        type: raw
      validate:
        description:
          - Command that checks the new content before it lands, with C(%s) where the temporary file's path
            goes; a non-zero exit fails the task and leaves the old file in place. Not run in check mode.
        type: str
      secret:
        description: The content never appears in the diff (only that it changed), and is masked in everything the
          module returns. The task still needs C(no_log), which also keeps the arguments out of the host's journal.
        type: bool
        default: false
      force:
        description: A link replaces a file that is in its place (never a directory).
        type: bool
        default: false
      backup:
        description:
          - Before changed content replaces an existing file, keep a copy of the old one beside it
            (C(PATH.PID.YYYY-MM-DD@HH:MM:SS~), as M(ansible.builtin.copy) names it); its path is the entry's
            C(backup_file).
        type: bool
        default: false
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Settle the firewall's files
  sparkfleet.gb10.host_files:
    files:
      - {path: /etc/sparkfleet/firewall, state: directory, mode: "0755"}
      - path: /etc/sparkfleet/firewall/fabric.nft
        content: "{{ lookup('ansible.builtin.template', 'fabric.nft.j2') }}"
        mode: "0644"
        validate: nft -c -f %s
  register: firewall_files
  notify: Reload the firewall

- name: Load the table when it changed
  ansible.builtin.command: /usr/local/sbin/fabric-firewall load
  when: "'/etc/sparkfleet/firewall/fabric.nft' in firewall_files.changed_paths"
  changed_when: true
"""

RETURN = r"""
files:
  description: One entry per item of O(files), in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The entry's path.
      type: str
    state:
      description: The entry's state.
      type: str
    changed:
      description: Whether this entry was (or, in check mode, would be) changed.
      type: bool
    what:
      description: What changed (C(created), C(content), C(target), C(replaced), C(owner), C(group), C(mode), C(removed)).
      type: list
      elements: str
    backup_file:
      description: The copy of the old content (O(files[].backup) on a file whose content changed).
      type: str
      returned: when a backup was made
changed_paths:
  description: The paths of the entries that changed, in order.
  returned: always
  type: list
  elements: str
paths:
  description:
    - The entries of O(files) by path, each the same dictionary as in RV(files), so that a task can ask
      what was done to one path (C(result.paths[path] is changed), C(result.paths[path].backup_file)).
    - A path given twice maps to its last entry.
  returned: always
  type: dict
"""

import grp
import os
import pwd
import shlex
import stat
import subprocess
import shutil
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text

NEW_FILE_MODE = 0o644
NEW_DIR_MODE = 0o755


class SettleError(Exception):
    """An entry cannot be settled; the message names its path."""


def parse_mode(mode, path):
    """An octal mode (``'0644'``, ``'644'``, ``0o644`` or ``420``) as an int; None when not given."""
    if mode is None or mode == "":
        return None
    if isinstance(mode, int):
        return mode
    text = str(mode).strip()
    try:
        return int(text, 8)
    except ValueError:
        raise SettleError("%s: mode %r is not an octal mode (write it like '0644')" % (path, mode))


# In check mode, the id of a user or group that does not exist yet: an earlier task of the same run (a
# service account) would have made it, so an entry owned by it is reported as a change, never an error.
NOT_YET = -2


def id_of(name, path, kind, lookup, check=False):
    """The number of a user or group given by name or number; None when not given."""
    if name is None or name == "":
        return None
    if str(name).isdigit():
        return int(name)
    try:
        return lookup(name)
    except KeyError:
        if check:
            return NOT_YET
        raise SettleError("%s: no %s %r on this host" % (path, kind, name))


def uid_of(owner, path, check=False):
    return id_of(owner, path, "user", lambda name: pwd.getpwnam(name).pw_uid, check)


def gid_of(group, path, check=False):
    return id_of(group, path, "group", lambda name: grp.getgrnam(name).gr_gid, check)


def attribute_changes(info, uid, gid, mode):
    """What of owner, group and mode differs from an existing entry's ``os.lstat``."""
    what = []
    if uid is not None and info.st_uid != uid:
        what.append("owner")
    if gid is not None and info.st_gid != gid:
        what.append("group")
    if mode is not None and stat.S_IMODE(info.st_mode) != mode:
        what.append("mode")
    return what


def lstat_or_none(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


class Settler:
    """Settles entries one by one; ``check`` reports without changing anything."""

    def __init__(self, check=False, want_diff=False, run=None):
        self.check = check
        self.want_diff = want_diff
        self.run = run or self._run
        self.diffs = []

    @staticmethod
    def _run(argv):
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        return proc.returncode, to_text(proc.stdout, errors="surrogate_or_strict"), \
            to_text(proc.stderr, errors="surrogate_or_strict")

    def settle(self, entry):
        path = entry["path"]
        if not os.path.isabs(path):
            raise SettleError("%s: the path must be absolute" % path)
        state = entry.get("state") or "file"
        handler = getattr(self, "_" + state)
        self.backup_file = None
        what = handler(entry, path, lstat_or_none(path))
        result = {"path": path, "state": state, "changed": bool(what), "what": what}
        if self.backup_file:
            result["backup_file"] = self.backup_file
        return result

    def _chown_chmod(self, path, info, uid, gid, mode, follow=False):
        what = attribute_changes(info, uid, gid, mode)
        if what and not self.check:
            if "owner" in what or "group" in what:
                (os.chown if follow else os.lchown)(path, -1 if uid is None else uid, -1 if gid is None else gid)
            if "mode" in what:
                os.chmod(path, mode)
        if what and self.want_diff:
            before = {"owner": info.st_uid, "group": info.st_gid, "mode": "%04o" % stat.S_IMODE(info.st_mode)}
            after = dict(before)
            after.update({key: value for key, value in (("owner", uid), ("group", gid),
                                                        ("mode", None if mode is None else "%04o" % mode))
                          if value is not None})
            self.diffs.append({"before_header": path + " (attributes)", "after_header": path + " (attributes)",
                               "before": "".join("%s: %s\n" % item for item in sorted(before.items())),
                               "after": "".join("%s: %s\n" % item for item in sorted(after.items()))})
        return what

    def _directory(self, entry, path, info):
        uid, gid = uid_of(entry.get("owner"), path, self.check), gid_of(entry.get("group"), path, self.check)
        mode = parse_mode(entry.get("mode"), path)
        if info is not None:
            # A link to a directory (a store on another disk) is followed, as the file module does.
            follow = stat.S_ISLNK(info.st_mode) and os.path.isdir(path)
            if follow:
                info = os.stat(path)
            if not stat.S_ISDIR(info.st_mode):
                raise SettleError("%s: exists and is not a directory" % path)
            return self._chown_chmod(path, info, uid, gid, mode, follow=follow)
        if self.want_diff:
            self.diffs.append({"before_header": path, "after_header": path, "before": "", "after": "directory\n"})
        if not self.check:
            os.makedirs(path, NEW_DIR_MODE, exist_ok=True)
            os.chmod(path, NEW_DIR_MODE if mode is None else mode)
            if uid is not None or gid is not None:
                os.lchown(path, -1 if uid is None else uid, -1 if gid is None else gid)
        return ["created"]

    def _absent(self, entry, path, info):
        if info is None:
            return []
        if stat.S_ISDIR(info.st_mode):
            raise SettleError("%s: is a directory; this module removes files and links only" % path)
        if self.want_diff:
            self.diffs.append({"before_header": path, "after_header": path, "before": "present\n", "after": ""})
        if not self.check:
            os.unlink(path)
        return ["removed"]

    def _link(self, entry, path, info):
        src = entry.get("src")
        if not src:
            raise SettleError("%s: a link needs src" % path)
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise SettleError("%s: is a directory, not a link" % path)
        if info is not None and not stat.S_ISLNK(info.st_mode) and not entry.get("force"):
            raise SettleError("%s: exists and is not a link; remove it first or set force" % path)
        is_link = info is not None and stat.S_ISLNK(info.st_mode)
        current = os.readlink(path) if is_link else None
        if current == src:
            uid, gid = uid_of(entry.get("owner"), path, self.check), gid_of(entry.get("group"), path, self.check)
            return self._chown_chmod(path, info, uid, gid, None)
        if self.want_diff:
            before = "-> %s\n" % current if is_link else ("" if info is None else "(a file)\n")
            self.diffs.append({"before_header": path, "after_header": path, "before": before, "after": "-> %s\n" % src})
        if not self.check:
            directory = os.path.dirname(path)
            fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
            os.close(fd)
            os.unlink(tmp)
            os.symlink(src, tmp)
            uid, gid = uid_of(entry.get("owner"), path, self.check), gid_of(entry.get("group"), path, self.check)
            if uid is not None or gid is not None:
                os.lchown(tmp, -1 if uid is None else uid, -1 if gid is None else gid)
            os.rename(tmp, path)
        return ["created"] if info is None else (["target"] if is_link else ["replaced"])

    def _file(self, entry, path, info):
        content = entry.get("content")
        if content is None:
            raise SettleError("%s: a file needs content" % path)
        data = to_bytes(content, errors="surrogate_or_strict")
        uid, gid = uid_of(entry.get("owner"), path, self.check), gid_of(entry.get("group"), path, self.check)
        mode = parse_mode(entry.get("mode"), path)
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise SettleError("%s: exists and is not a regular file" % path)
        if info is not None:
            with open(path, "rb") as handle:
                old = handle.read()
            if old == data:
                return self._chown_chmod(path, info, uid, gid, mode)
        else:
            old = None
        if self.want_diff:
            if entry.get("secret"):
                self.diffs.append({"before_header": path, "after_header": path,
                                   "before": "" if old is None else "(secret content)\n",
                                   "after": "(secret content, changed)\n"})
            else:
                self.diffs.append({"before_header": path, "after_header": path,
                                   "before": "" if old is None else to_text(old, errors="surrogate_or_replace"),
                                   "after": to_text(data, errors="surrogate_or_replace")})
        what = ["created"] if old is None else ["content"]
        if info is not None:
            what += list(attribute_changes(info, uid, gid, mode))
        if self.check:
            return what
        directory = os.path.dirname(path)
        if not os.path.isdir(directory):
            raise SettleError("%s: its directory %s does not exist (settle the directory first)" % (path, directory))
        if mode is None:
            mode = stat.S_IMODE(info.st_mode) if info is not None else NEW_FILE_MODE
        if info is not None:
            uid = info.st_uid if uid is None else uid
            gid = info.st_gid if gid is None else gid
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                if uid is not None or gid is not None:
                    os.fchown(handle.fileno(), -1 if uid is None else uid, -1 if gid is None else gid)
                os.fchmod(handle.fileno(), mode)
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            validate = entry.get("validate")
            if validate:
                if "%s" not in validate:
                    raise SettleError("%s: validate %r has no %%s for the file" % (path, validate))
                argv = [part.replace("%s", tmp) for part in shlex.split(validate)]
                rc, out, err = self.run(argv)
                if rc != 0:
                    raise SettleError("%s: the new content failed its check (%s, rc %d): %s"
                                      % (path, validate, rc, (err or out).strip()))
            if entry.get("backup") and old is not None:
                self.backup_file = "%s.%d.%s" % (path, os.getpid(), time.strftime("%Y-%m-%d@%H:%M:%S~"))
                shutil.copy2(path, self.backup_file)
            os.rename(tmp, path)
        except BaseException:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            raise
        return what


def settle_all(entries, check=False, want_diff=False, run=None):
    """``(results, diffs)`` for the entries in order; raises SettleError at the first that cannot be settled,
    after settling the ones before it (their results are on the exception as ``done``)."""
    settler = Settler(check=check, want_diff=want_diff, run=run)
    results = []
    for entry in entries:
        try:
            results.append(settler.settle(entry))
        except SettleError as err:
            err.done = results
            raise
    return results, settler.diffs


def summary(results):
    """What the module returns about the entries it settled: each in order (files), the changed
    paths, and each by its path (paths)."""
    return dict(changed=any(r["changed"] for r in results), files=results,
                changed_paths=[r["path"] for r in results if r["changed"]],
                paths=dict((r["path"], r) for r in results))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type="list", elements="dict", required=True, options=dict(
                path=dict(type="path", required=True),
                state=dict(type="str", default="file", choices=["file", "directory", "link", "absent"]),
                content=dict(type="str"),
                template=dict(type="str"),
                template_vars=dict(type="dict"),
                role_file=dict(type="str"),
                src=dict(type="str"),
                owner=dict(type="str"),
                group=dict(type="str"),
                mode=dict(type="raw"),
                validate=dict(type="str"),
                secret=dict(type="bool", default=False),
                backup=dict(type="bool", default=False),
                force=dict(type="bool", default=False),
            )),
        ),
        supports_check_mode=True,
    )
    # A secret's content is masked in whatever this module returns, a failure's message included, so that a later
    # task may show the error of a call that carries a secret. The task itself still needs no_log: the module's
    # arguments reach the host's journal before this runs.
    unrendered = [entry["path"] for entry in module.params["files"] if entry.get("template") or entry.get("role_file")]
    if unrendered:
        module.fail_json(msg="host_files: template and role_file are rendered by the collection's action plugin on the "
                             "controller; the module got them unrendered for %s (call it as sparkfleet.gb10.host_files)"
                         % ", ".join(unrendered), changed=False)
    for entry in module.params["files"]:
        if entry.get("secret") and entry.get("content"):
            module.no_log_values.add(entry["content"])
    try:
        results, diffs = settle_all(module.params["files"], check=module.check_mode, want_diff=module._diff)
    except (SettleError, OSError) as err:
        done = getattr(err, "done", [])
        module.fail_json(msg=to_text(err), **summary(done))
    result = summary(results)
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
