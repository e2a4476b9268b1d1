# -*- coding: utf-8 -*-
"""tools/changelog_check.py on a real temporary git repository: a change to
roles/ or plugins/ after the last render (the last commit that changed
changelogs/changelog.yaml) fails without a fragment added at or after it."""

import os
import subprocess
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tools"))

import changelog_check  # noqa: E402

FRAGMENT = "minor_changes:\n  - nccl - a change.\n"


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def write(repo, path, text="x\n"):
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def init(repo):
    """An empty repository in ``repo`` whose commits need no signing and no user of the machine."""
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.invalid")
    git(repo, "config", "user.name", "dev")
    git(repo, "config", "commit.gpgsign", "false")


def commit(repo, message, files):
    for path, text in files.items():
        write(repo, path, text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path):
    """A repository whose last commit is a render: changelog.yaml, no fragments."""
    init(tmp_path)
    commit(tmp_path, "roles before the render", {"roles/nccl/tasks/main.yml": "- debug: {}\n"})
    commit(tmp_path, "render 0.1.0", {"changelogs/changelog.yaml": "releases: {}\n", "changelogs/fragments/.keep": " "})
    return tmp_path


def test_a_render_with_nothing_after_it_passes(repo):
    assert changelog_check.problems(str(repo)) == []
    assert changelog_check.main(["--repo", str(repo)]) == 0


def test_a_role_change_without_fragment_fails(repo):
    commit(repo, "change nccl", {"roles/nccl/defaults": "a: 1\n"})
    found = changelog_check.problems(str(repo))
    assert len(found) == 1 and "change nccl" in found[0], found
    assert changelog_check.main(["--repo", str(repo)]) == 1


def test_a_plugin_change_with_its_fragment_passes(repo):
    commit(repo, "change a filter", {"plugins/filter/f.py": "x = 1\n", "changelogs/fragments/f.yml": FRAGMENT})
    assert changelog_check.problems(str(repo)) == []


def test_a_fragment_in_a_later_commit_covers_the_change(repo):
    commit(repo, "change a filter", {"plugins/filter/f.py": "x = 1\n"})
    assert changelog_check.problems(str(repo))
    commit(repo, "its fragment", {"changelogs/fragments/f.yml": FRAGMENT})
    assert changelog_check.problems(str(repo)) == []


def test_a_fragment_before_the_change_does_not_cover_it(repo):
    commit(repo, "fragment first", {"changelogs/fragments/f.yml": FRAGMENT})
    commit(repo, "then the role", {"roles/ray/vars": "a: 1\n"})
    found = changelog_check.problems(str(repo))
    assert len(found) == 1 and "then the role" in found[0], found


def test_changes_outside_roles_and_plugins_need_no_fragment(repo):
    commit(repo, "tools only", {"tools/x.py": "x = 1\n", "README": "text\n"})
    assert changelog_check.problems(str(repo)) == []


def test_a_new_render_resets_the_base(repo):
    commit(repo, "change nccl", {"roles/nccl/defaults": "a: 1\n"})
    assert changelog_check.problems(str(repo))
    commit(repo, "render again", {"changelogs/changelog.yaml": "releases: {'0.1.0': {}}\n"})
    assert changelog_check.problems(str(repo)) == []


def test_a_fragment_removed_again_does_not_count(repo):
    commit(repo, "change and fragment", {"roles/nccl/defaults": "a: 1\n", "changelogs/fragments/f.yml": FRAGMENT})
    os.remove(repo / "changelogs" / "fragments" / "f.yml")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "drop the fragment")
    assert changelog_check.problems(str(repo))


def test_the_work_tree(repo):
    write(repo, "roles/nccl/tasks/extra.yml", "- debug: {}\n")
    found = changelog_check.problems(str(repo))
    assert len(found) == 1 and found[0].startswith("work tree: roles/nccl/tasks/extra.yml"), found
    assert changelog_check.problems(str(repo), committed_only=True) == []
    write(repo, "changelogs/fragments/extra.yml", FRAGMENT)
    assert changelog_check.problems(str(repo)) == []


def test_without_a_render_every_commit_counts(tmp_path):
    init(tmp_path)
    commit(tmp_path, "first role", {"roles/a": "x\n"})
    assert changelog_check.problems(str(tmp_path))
    commit(tmp_path, "first fragment", {"changelogs/fragments/a.yml": FRAGMENT})
    assert changelog_check.problems(str(tmp_path)) == []


def test_a_shallow_clone_is_refused(repo, tmp_path_factory):
    commit(repo, "change and fragment", {"roles/nccl/defaults": "a: 1\n", "changelogs/fragments/f.yml": FRAGMENT})
    clone = tmp_path_factory.mktemp("clone")
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(clone / "c")],
                   check=True, capture_output=True)
    found = changelog_check.problems(str(clone / "c"))
    assert found and "shallow" in found[0]
