# -*- coding: utf-8 -*-
"""Every role's task files nest at most four deep: tasks/main.yml is depth 1, a file it includes or imports depth
2, and so on. A deeper chain is a file whose only job is to route to the next one; merge it instead.

The chains follow ansible.builtin.include_tasks and import_tasks (short names too), with the file name given
directly or as ``file:``, in blocks, rescue and always. A templated name is followed over its alternatives: the
quoted strings in its expression and the ``choices`` of the role variables it names (meta/argument_specs.yml),
for example ``apply_{{ qsfp_network_apply_method }}.yml`` over apply_try.yml and apply_apply.yml. A variable
without choices names a file the user gives (os_update_reboot_tasks), which is not the role's own. A name that
resolves to nothing, a file that does not exist and a file that includes itself again are reported."""

import glob
import itertools
import os
import re

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MAX_DEPTH = 4
INCLUDES = tuple(prefix + action for action in ("include_tasks", "import_tasks")
                 for prefix in ("", "ansible.builtin.", "ansible.legacy."))
TEMPLATE = re.compile(r"{{(.*?)}}")
LITERAL = re.compile(r"'([^']*)'|\"([^\"]*)\"")
NAME = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


class IncludeError(Exception):
    pass


def _tasks(items):
    """Every task of a task list, blocks opened."""
    for item in items or []:
        if not isinstance(item, dict):
            continue
        yield item
        for key in ("block", "rescue", "always"):
            yield from _tasks(item.get(key))


def _included_names(task):
    for action in INCLUDES:
        if action in task:
            value = task[action]
            if isinstance(value, dict):
                value = value.get("file") or value.get("_raw_params")
            yield str(value)


def _choices(role_dir):
    """{variable: [choice, ...]} of every entry point's options in the role's argument spec."""
    path = os.path.join(role_dir, "meta", "argument_specs.yml")
    if not os.path.exists(path):
        return {}
    with open(path) as handle:
        specs = (yaml.safe_load(handle) or {}).get("argument_specs") or {}
    found = {}
    for entry in specs.values():
        for name, option in ((entry or {}).get("options") or {}).items():
            if (option or {}).get("choices"):
                found.setdefault(name, [])
                found[name] += [str(c) for c in option["choices"] if str(c) not in found[name]]
    return found


def alternatives(name, choices):
    """The file names a templated include name can take (the name itself when it is not templated)."""
    parts = TEMPLATE.split(name)
    if len(parts) == 1:
        return [name]
    slots = []
    for index, part in enumerate(parts):
        if index % 2 == 0:
            slots.append([part])
            continue
        options = [a or b for a, b in LITERAL.findall(part)]
        for variable in NAME.findall(LITERAL.sub("", part)):
            options += [c for c in choices.get(variable, []) if c not in options]
        if not options:
            raise IncludeError("cannot resolve the templated name %r: no quoted string in it and no variable with "
                               "choices in meta/argument_specs.yml" % name)
        slots.append(options)
    return ["".join(combination) for combination in itertools.product(*slots)]


def _resolve(tasks_dir, current, name):
    """The file an include names: beside the including file first, then under the role's tasks/, as Ansible does."""
    for base in (os.path.dirname(current), tasks_dir):
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(path):
            return path
    raise IncludeError("%s includes %s, which does not exist" % (os.path.relpath(current, tasks_dir), name))


def deepest_chain(role_dir):
    """The longest include chain from the role's tasks/main.yml, as file names relative to tasks/."""
    tasks_dir = os.path.join(role_dir, "tasks")
    choices = _choices(role_dir)

    def walk(path, chain):
        chain = chain + [path]
        with open(path) as handle:
            data = yaml.safe_load(handle)
        longest = chain
        for task in _tasks(data):
            for name in _included_names(task):
                try:
                    names = alternatives(name, choices)
                except IncludeError as exc:
                    raise IncludeError("%s: %s" % (_show(tasks_dir, chain), exc))
                for candidate in names:
                    target = _resolve(tasks_dir, path, candidate)
                    if target in chain:
                        raise IncludeError("include cycle: %s" % _show(tasks_dir, chain + [target]))
                    found = walk(target, chain)
                    if len(found) > len(longest):
                        longest = found
        return longest

    return [os.path.relpath(p, tasks_dir) for p in walk(os.path.join(tasks_dir, "main.yml"), [])]


def _show(tasks_dir, chain):
    return " -> ".join(os.path.relpath(p, tasks_dir) for p in chain)


ROLES = sorted(os.path.dirname(os.path.dirname(p)) for p in glob.glob(os.path.join(REPO, "roles", "*", "tasks", "main.yml")))


@pytest.mark.parametrize("role_dir", ROLES, ids=os.path.basename)
def test_include_chains_are_at_most_four_deep(role_dir):
    chain = deepest_chain(role_dir)
    assert len(chain) <= MAX_DEPTH, "roles/%s: an include chain %d deep (at most %d): %s" % (
        os.path.basename(role_dir), len(chain), MAX_DEPTH, " -> ".join(chain))


def _role(tmp_path, files, specs=None):
    for name, text in files.items():
        path = tmp_path / "tasks" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if specs:
        (tmp_path / "meta").mkdir()
        (tmp_path / "meta" / "argument_specs.yml").write_text(yaml.safe_dump(specs))
    return str(tmp_path)


def _include(name, action="ansible.builtin.include_tasks", form="plain"):
    value = {"file": name, "apply": {"tags": ["t"]}} if form == "file" else name
    return yaml.safe_dump([{"name": "Go on", action: value}])


def test_the_depth_counts_every_form_of_include(tmp_path):
    role = _role(tmp_path, {
        "main.yml": yaml.safe_dump([{"name": "Phase", "block": [{"name": "A", "ansible.builtin.import_tasks": "a.yml"}]},
                                    {"name": "Short", "include_tasks": "b.yml"}]),
        "a.yml": _include("c.yml", form="file"),
        "b.yml": "---\n- name: Nothing more\n  ansible.builtin.debug: {msg: b}\n",
        "c.yml": yaml.safe_dump([{"name": "R", "block": [], "rescue": [{"name": "D", "ansible.legacy.import_tasks": "d.yml"}]}]),
        "d.yml": _include("e.yml"),
        "e.yml": "---\n- name: Deep\n  ansible.builtin.debug: {msg: e}\n",
    })
    assert deepest_chain(role) == ["main.yml", "a.yml", "c.yml", "d.yml", "e.yml"]


def test_a_templated_name_is_followed_over_its_alternatives(tmp_path):
    role = _role(tmp_path, {
        "main.yml": yaml.safe_dump([{"name": "Apply", "ansible.builtin.include_tasks": "apply_{{ method }}.yml"},
                                    {"name": "Reboot", "ansible.builtin.include_tasks": "{{ user_tasks or 'reboot.yml' }}"}]),
        "apply_try.yml": _include("try_confirm.yml"),
        "apply_apply.yml": "---\n- name: Apply\n  ansible.builtin.debug: {msg: apply}\n",
        "try_confirm.yml": "---\n- name: Confirm\n  ansible.builtin.debug: {msg: confirm}\n",
        "reboot.yml": "---\n- name: Reboot\n  ansible.builtin.debug: {msg: reboot}\n",
    }, specs={"argument_specs": {"main": {"options": {"method": {"type": "str", "choices": ["try", "apply"]}}}}})
    assert deepest_chain(role) == ["main.yml", "apply_try.yml", "try_confirm.yml"]
    assert alternatives("{{ user_tasks or 'reboot.yml' }}", {}) == ["reboot.yml"]


def test_what_cannot_be_followed_is_reported(tmp_path):
    unresolved = _role(tmp_path / "a", {"main.yml": _include("{{ somewhere }}.yml")})
    with pytest.raises(IncludeError, match=r"main.yml: cannot resolve the templated name '{{ somewhere }}.yml'"):
        deepest_chain(unresolved)
    missing = _role(tmp_path / "b", {"main.yml": _include("gone.yml")})
    with pytest.raises(IncludeError, match="main.yml includes gone.yml, which does not exist"):
        deepest_chain(missing)
    cycle = _role(tmp_path / "c", {"main.yml": _include("a.yml"), "a.yml": _include("main.yml")})
    with pytest.raises(IncludeError, match="include cycle: main.yml -> a.yml -> main.yml"):
        deepest_chain(cycle)


def test_a_chain_five_deep_fails_and_is_named(tmp_path):
    role = _role(tmp_path, {"main.yml": _include("a.yml"), "a.yml": _include("b.yml"), "b.yml": _include("c.yml"),
                            "c.yml": _include("d.yml"), "d.yml": "---\n- name: D\n  ansible.builtin.debug: {msg: d}\n"})
    with pytest.raises(AssertionError, match=r"5 deep \(at most 4\): main.yml -> a.yml -> b.yml -> c.yml -> d.yml"):
        test_include_chains_are_at_most_four_deep(role)
