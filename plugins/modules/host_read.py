#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_read
short_description: What a role needs to know about a host before it acts, read in one call
extends_documentation_fragment:
  - sparkfleet.gb10.attributes.read_only
description:
  - Looks at several paths (whether each exists, what it is, its text when asked) and runs several
    read-only commands (their return code and output), in one round trip over the connection.
  - A role asks the host the same kind of question several times before it decides what to change (is nvcc
    there, which version is it, what do the install stamps say); one C(stat), C(slurp) or C(command) task
    per question costs one module call each, on every rerun. This module answers them together.
  - It never changes anything, and answers the same in check mode. A missing path or a command that fails
    is an answer, not an error; the role's own assertions decide what to refuse, with their own messages.
version_added: "0.1.0"
author: sparkfleet.gb10 developers (!UNKNOWN)
options:
  files:
    description: The paths to look at.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: An absolute path; a link is followed. Its answer is keyed by the path exactly as given.
        type: str
        required: true
      content:
        description: Return the file's text (UTF-8; undecodable bytes replaced). Only for regular files.
        type: bool
        default: false
  globs:
    description:
      - Shell patterns whose matching regular files (not links) are listed, as the find module lists them
        with C(file_type=file).
      - Each is answered under its O(globs[].name).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The key of this pattern's answer in RV(globs); unique.
        type: str
        required: true
      pattern:
        description: An absolute shell pattern (C(/etc/systemd/system/sparkfleet-vllm-*.service)).
        type: str
        required: true
  commands:
    description:
      - Read-only commands, run in the order given, without a shell.
      - Each is answered under its O(commands[].name).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The key of this command's answer in RV(commands); unique.
        type: str
        required: true
      argv:
        description: The program and its arguments. A program that is not there answers rc 127.
        type: list
        elements: str
        required: true
      chdir:
        description: The directory to run it in.
        type: path
"""

EXAMPLES = r"""
- name: Find nvcc and read its version
  sparkfleet.gb10.host_read:
    files:
      - path: /usr/local/cuda/bin/nvcc
      - path: /opt/sparkfleet/nccl/2.28.9-sm121/sparkfleet-build.json
        content: true
    commands:
      - name: nvcc
        argv: [/usr/local/cuda/bin/nvcc, --version]
  register: __nccl_host

- name: Refuse to build without nvcc
  ansible.builtin.assert:
    that: __nccl_host.files['/usr/local/cuda/bin/nvcc'].executable
"""

RETURN = r"""
files:
  description: Each path of O(files), by path.
  returned: always
  type: dict
  sample:
    /usr/local/cuda/bin/nvcc: {exists: true, type: file, islink: false, executable: true, mode: "0755", owner: root,
                               group: root}
    /opt/sparkfleet/nccl/2.28.9-sm121/sparkfleet-build.json: {exists: false, type: null, islink: false, executable: false,
                                                             mode: null, owner: null, group: null, content: null}
  contains:
    exists:
      description: Whether the path (a link's target) exists.
      type: bool
    type:
      description: C(file), C(directory) or C(other); null when it does not exist.
      type: str
    islink:
      description: Whether the path itself is a symbolic link.
      type: bool
    executable:
      description: Whether this user may execute it (a program, or a directory it may enter).
      type: bool
    mode:
      description: The permission bits (of a link's target) as four octal digits, for example C(0755); null when it
        does not exist. A caller that skips settling a path it found uses this to see drift of its mode.
      type: str
    owner:
      description: The owning account's name (of a link's target; its number when it has no name); null when it does
        not exist.
      type: str
    group:
      description: The owning group's name (of a link's target; its number when it has no name); null when it does
        not exist.
      type: str
    content:
      description: The text of a regular file (O(files[].content)); null when absent or not a regular file.
      type: str
      returned: when O(files[].content) is true
globs:
  description: The regular files each pattern of O(globs) matches, by name, sorted.
  returned: always
  type: dict
  sample: {units: [/etc/systemd/system/sparkfleet-vllm-tiny.service]}
commands:
  description: Each command of O(commands), by name.
  returned: always
  type: dict
  sample:
    nvcc: {rc: 0, stdout: "nvcc: NVIDIA (R) Cuda compiler driver", stderr: "", argv: [/usr/local/cuda/bin/nvcc, --version]}
  contains:
    rc:
      description: The return code; 127 when the program is not there or cannot be run.
      type: int
    stdout:
      description: Its output, without the final line break (as the command module returns it).
      type: str
    stdout_lines:
      description: RV(commands.stdout) split into lines.
      type: list
      elements: str
    stderr:
      description: Its error output, without the final line break.
      type: str
    argv:
      description: What was run.
      type: list
      elements: str
"""

import glob
import grp
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text

NOT_RUNNABLE = 127


def _name(lookup, number):
    """The account or group name of ``number``, or the number as text when it has none."""
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def look(path, want_content):
    """What is at ``path``: exists, type, islink, executable, mode, owner, group (and content, when wanted)."""
    out = {"exists": False, "type": None, "islink": os.path.islink(path), "executable": False, "mode": None,
           "owner": None, "group": None}
    if want_content:
        out["content"] = None
    try:
        info = os.stat(path)
    except OSError:
        return out
    mode = info.st_mode
    out["exists"] = True
    out["type"] = "file" if stat.S_ISREG(mode) else "directory" if stat.S_ISDIR(mode) else "other"
    out["executable"] = os.access(path, os.X_OK)
    out["mode"] = "%04o" % stat.S_IMODE(mode)
    out["owner"] = _name(pwd.getpwuid, info.st_uid)
    out["group"] = _name(grp.getgrgid, info.st_gid)
    if want_content and out["type"] == "file":
        with open(path, "rb") as handle:
            out["content"] = to_text(handle.read(), errors="surrogate_then_replace")
    return out


def run_one(run_command, argv, chdir=None):
    """One command's answer; ``run_command`` is AnsibleModule.run_command (or a stand-in)."""
    try:
        rc, stdout, stderr = run_command(argv, cwd=chdir, handle_exceptions=False)
    except (OSError, ValueError) as err:
        rc, stdout, stderr = NOT_RUNNABLE, "", to_text(err)
    stdout = to_text(stdout).rstrip("\r\n")
    stderr = to_text(stderr).rstrip("\r\n")
    return {"rc": rc, "stdout": stdout, "stdout_lines": stdout.splitlines(), "stderr": stderr, "argv": list(argv)}


def matching_files(pattern):
    """The regular files (not links) ``pattern`` matches, sorted."""
    return sorted(path for path in glob.glob(pattern) if stat.S_ISREG(os.lstat(path).st_mode))


def unique_names(option, entries):
    """Refuse a name given twice in ``option`` (each answer is keyed by its name)."""
    names = [e["name"] for e in entries]
    twice = sorted(set(n for n in names if names.count(n) > 1))
    if twice:
        raise ValueError("%s: the name %s is given more than once; each answer is keyed by its name"
                         % (option, ", ".join(twice)))


def read_all(files, commands, run_command, globs=()):
    """``(files by path, commands by name, matching files by glob name)``; a wrong request is a
    ValueError naming what is wrong, raised before anything runs."""
    unique_names("commands", commands)
    unique_names("globs", globs)
    relative = [g["pattern"] for g in globs if not os.path.isabs(g["pattern"])]
    if relative:
        raise ValueError("globs: %s is not an absolute pattern" % ", ".join(relative))
    empty = [c["name"] for c in commands if not c["argv"]]
    if empty:
        raise ValueError("commands: %s has an empty argv" % ", ".join(empty))
    by_path = {}
    for entry in files:
        if not os.path.isabs(entry["path"]):
            raise ValueError("files: %s is not an absolute path" % entry["path"])
        by_path[entry["path"]] = look(entry["path"], entry.get("content", False))
    by_name = {}
    for command in commands:
        by_name[command["name"]] = run_one(run_command, command["argv"], command.get("chdir"))
    return by_path, by_name, dict((g["name"], matching_files(g["pattern"])) for g in globs)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="str", required=True),
                content=dict(type="bool", default=False),
            )),
            globs=dict(type="list", elements="dict", default=[], options=dict(
                name=dict(type="str", required=True),
                pattern=dict(type="str", required=True),
            )),
            commands=dict(type="list", elements="dict", default=[], options=dict(
                name=dict(type="str", required=True),
                argv=dict(type="list", elements="str", required=True),
                chdir=dict(type="path"),
            )),
        ),
        supports_check_mode=True,
    )
    try:
        files, commands, globs = read_all(module.params["files"], module.params["commands"], module.run_command,
                                          globs=module.params["globs"])
    except (ValueError, OSError) as err:
        module.fail_json(msg=to_text(err))
    module.exit_json(changed=False, files=files, commands=commands, globs=globs)


if __name__ == "__main__":
    main()
