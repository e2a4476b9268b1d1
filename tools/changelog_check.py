#!/usr/bin/env python3
"""Fails when a change to roles/ or plugins/ carries no changelog fragment.

CHANGELOG.md is rendered by antsibull-changelog from changelogs/changelog.yaml,
and a render (``antsibull-changelog release``) consumes the fragments under
changelogs/fragments/ into that file. So the last commit that changed
changelogs/changelog.yaml is the last render, and the rule is:

    every commit after the last render that touches roles/ or plugins/ must
    be followed by a fragment: a file changelogs/fragments/*.yml (or .yaml)
    that exists at HEAD and was added in that commit or in a commit that
    descends from it.

It reads only the history of the checkout, so it works the same in a fresh
``git clone`` of main (a shallow clone is refused: it lacks the history).
Without a render in the history every commit counts.

The work tree counts as one more commit on top of HEAD, unless
``--committed-only``: a change to roles/ or plugins/ not yet committed needs a
fragment not yet committed (untracked or newly added), and an uncommitted
change of changelogs/changelog.yaml is a render that covers all of it, and a
new fragment in the work tree comes after every commit.

    python3 tools/changelog_check.py [--repo DIR] [--committed-only]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

WATCHED = ("roles", "plugins")
FRAGMENTS = "changelogs/fragments"
CHANGES = "changelogs/changelog.yaml"
FRAGMENT_SUFFIXES = (".yml", ".yaml")
WORK_TREE = "work tree"


def git(repo, *args):
    return subprocess.run(
        ["git", "-C", repo, *args], check=True, capture_output=True, text=True
    ).stdout


def is_fragment(path):
    return path.startswith(FRAGMENTS + "/") and path.endswith(FRAGMENT_SUFFIXES)


def is_ancestor(repo, older, newer):
    return subprocess.run(
        ["git", "-C", repo, "merge-base", "--is-ancestor", older, newer], capture_output=True, check=False
    ).returncode == 0


def work_tree_status(repo, *paths):
    """(status, path) of every uncommitted change under paths, untracked files included."""
    out = git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths)
    entries = out.split("\0")
    result = []
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if not entry:
            continue
        status, path = entry[:2], entry[3:]
        if status[0] in "RC":
            i += 1  # the rename's source path follows
        result.append((status, path))
    return result


def problems(repo=".", committed_only=False):
    """The commits (and the work tree) that touch roles/ or plugins/ without a fragment after them."""
    if git(repo, "rev-parse", "--is-shallow-repository").strip() == "true":
        return ["the clone is shallow: the check needs the history back to the last render"
                " (git fetch --unshallow)"]
    has_head = subprocess.run(["git", "-C", repo, "rev-parse", "--verify", "-q", "HEAD"],
                              capture_output=True, check=False).returncode == 0
    base = git(repo, "log", "-1", "--format=%H", "--", CHANGES).strip() if has_head else ""
    span = [f"{base}..HEAD"] if base else ["HEAD"]

    if not committed_only and work_tree_status(repo, CHANGES):
        return []  # a render in the work tree covers every change before it

    changed = git(repo, "rev-list", "--reverse", *span, "--", *WATCHED).split() if has_head else []
    at_head = set(git(repo, "ls-tree", "-r", "--name-only", "HEAD", "--", FRAGMENTS).splitlines()) if has_head else set()
    added_in = {}
    for path in sorted(p for p in at_head if is_fragment(p)):
        commit = git(repo, "log", "-1", "--diff-filter=A", "--format=%H", *span, "--", path).strip()
        if commit:
            added_in[path] = commit

    new_fragments = [] if committed_only else [
        p for status, p in work_tree_status(repo, FRAGMENTS)
        if is_fragment(p) and (status == "??" or status[0] == "A")]
    found = []
    for commit in changed if not new_fragments else []:  # a new fragment in the work tree comes after them all
        if not any(added == commit or is_ancestor(repo, commit, added) for added in added_in.values()):
            subject = git(repo, "log", "-1", "--format=%h %s", commit).strip()
            found.append(f"commit {subject}: changes {' or '.join(WATCHED)} and no fragment was added"
                         f" under {FRAGMENTS}/ in it or after it")

    if not committed_only:
        touched = [p for dummy, p in work_tree_status(repo, *WATCHED)]
        if touched and not new_fragments:
            shown = ", ".join(touched[:5]) + (f" and {len(touched) - 5} more" if len(touched) > 5 else "")
            found.append(f"{WORK_TREE}: {shown} changed and no new fragment under {FRAGMENTS}/")
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=".", help="the checkout to judge (default: .)")
    parser.add_argument("--committed-only", action="store_true",
                        help="judge the commits only, not the uncommitted work tree")
    args = parser.parse_args(argv)
    found = problems(args.repo, args.committed_only)
    for line in found:
        print(f"changelog-check: {line}", file=sys.stderr)
    if found:
        print("changelog-check: add a fragment, e.g. changelogs/fragments/<topic>.yml with\n"
              "  minor_changes:\n    - role_or_plugin - what changed, for its user.\n"
              "(sections: changelogs/config.yaml; a change nobody needs to read about goes under 'trivial:')",
              file=sys.stderr)
        return 1
    print("changelog-check: every change to roles/ or plugins/ since the last render has a fragment")
    return 0


if __name__ == "__main__":
    sys.exit(main())
