# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The one redaction of every message the collection prints.

Two halves, used together wherever a message is made:

- ``secret_values(data, names)`` collects every secret value of the run from the data the message is made of (an
  inventory's host variables, a role's settings): the value of every variable named in ``names`` (the roles'
  ``no_log`` options), every value under a key that names a secret (``hf_token``, ``VLLM_API_KEY``,
  ``ansible_become_password``; not ``*_file``, ``*_dir``, ``*_path``), every argv value after a flag that names one
  (``--api-key K``, ``--hf-token=K``), every ``NAME=value`` whose name names one, the credentials of a URL and every
  value shaped like a known token (``hf_...``, ``sk-...``), however deep in lists and mappings;
- ``redact(value, secrets)`` returns ``value`` with each of those secrets hidden wherever it appears (inside lists,
  mappings and strings, a secret quoted in a longer text included), and with the same shapes hidden again by pattern,
  so a message made from data the collector never saw (a module's answer, a callback's line) still shows none.

A hidden value reads ``SECRET_SHOWN``. Values shorter than ``MIN_SECRET`` characters and the words of ``NOT_SECRET``
(``api_key: none``) are never searched for inside other text: they would hide ordinary words.
"""

from __future__ import annotations

import difflib
import re

try:
    from collections.abc import Mapping
except ImportError:  # pragma: no cover - Python 2 is not supported by the collection
    Mapping = dict

# What a message shows instead of a secret.
SECRET_SHOWN = "(hidden)"
# A name that reads like a secret's, known or not (sparkfleet_hf_token, ray_head_auth_token, a misspelt api_key,
# ansible_become_pass): its value is never printed.
SECRET_NAME = re.compile(r"(^|[_-])(token|key|secret|password|passwd|pass|passphrase|credentials?)([_-]|$)",
                         re.IGNORECASE)
# Names of that kind whose value is where a secret is kept, or why, not the secret (api_key_file, ray_auth_token_file,
# RAY_AUTH_TOKEN_PATH, api_key_optout_reason, vllm_service_secrets_dir, the choice 'none').
NOT_SECRET_NAME = re.compile(r"[_-](file|files|dir|path|reason|mode|sources?)$", re.IGNORECASE)
# A value shaped like a known kind of token (Hugging Face, OpenAI-style, GitHub), under a key of any name.
_TOKEN = r"(?:hf_|sk-|ghp_|gho_|github_pat_)[A-Za-z0-9_-]{8,}"
SECRET_VALUE = re.compile(r"^\s*" + _TOKEN)
_TOKEN_SHAPE = re.compile(r"(?<![A-Za-z0-9_-])" + _TOKEN)
# The shortest value searched for inside other text, and values never taken for a secret.
MIN_SECRET = 4
NOT_SECRET = frozenset(("none", "null", "true", "false", "yes", "no", "", SECRET_SHOWN))

# Shapes of a secret inside a text: an argv flag and its value (also as two quoted items of a printed list), NAME=value,
# key: value of a printed mapping (quoted, or YAML's plain NAME_WITH_UNDERSCORE: value), the user part of a URL.
_FLAG_VALUE = re.compile(r"""(?<![\w-])(--?[A-Za-z][\w-]*)(=|[ \t]+)(['"]?)([^\s'",\]]+)\3""")
_ASSIGN = re.compile(r"""(?<![\w-])([A-Za-z_][\w.-]*)=(['"]?)([^\s'"&,;\]]+)\2""")
_FLAG_ITEM = re.compile(r"""(['"])(--?[A-Za-z][\w-]*)\1\s*,\s*(['"])([^'"]*)\3""")
_KEYED = re.compile(r"""(['"]?)([A-Za-z_][\w.-]*)\1(\s*:\s*)(['"])([^'"]*)\4""")
_KEYED_PLAIN = re.compile(r"""(?<![\w.-])([A-Za-z][\w.-]*_[\w.-]*):[ \t]+([^\s'",}\]]+)""")
# Each shape with the group of its name and of its value.
_NAMED_SHAPES = ((_FLAG_VALUE, 1, 4), (_ASSIGN, 1, 3), (_FLAG_ITEM, 2, 4), (_KEYED, 2, 5), (_KEYED_PLAIN, 1, 2))
_URL_USERINFO = re.compile(r"(?<=//)([^/@?#\s'\"]+)@")
_URL_SECRET_PARAM = re.compile(r"(?<=[?&])([^=&#]*(?:token|key|secret|password|passwd|signature|sig|credential)[^=&#]*)"
                               r"=[^&#]*", re.IGNORECASE)


def names_secret(name):
    """Whether a variable, key, environment name or argv flag (``--hf-token``) names a secret value."""
    name = str(name).lstrip("-")
    return bool(SECRET_NAME.search(name)) and not NOT_SECRET_NAME.search(name)


def _worth(value):
    """A text value that may be a secret: long enough, and not one of the words of ``NOT_SECRET``."""
    return isinstance(value, str) and len(value.strip()) >= MIN_SECRET and value.strip().lower() not in NOT_SECRET


def _leaves(value):
    """Every scalar under ``value`` (a secret-named key may hold a list or a mapping), as text."""
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _leaves(item)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def _flag_takes_secret(item):
    """``--api-key`` alone, as one argv item, whose next item is its value."""
    return isinstance(item, str) and item.startswith("-") and "=" not in item and " " not in item.strip() \
        and names_secret(item)


def text_secrets(text):
    """The secrets a text shows by their shape: values of secret flags and of secret NAME=value, the user part of a
    URL and its secret query values, and values shaped like a token."""
    text = str(text)
    found = set()
    for pattern, name, value in _NAMED_SHAPES:
        found.update(match.group(value) for match in pattern.finditer(text) if names_secret(match.group(name)))
    for match in _URL_USERINFO.finditer(text):
        found.add(match.group(1))
        found.update(match.group(1).split(":", 1)[1:])
    for match in _URL_SECRET_PARAM.finditer(text):
        found.add(match.group(0).split("=", 1)[1])
    found.update(_TOKEN_SHAPE.findall(text))
    return set(value for value in found if _worth(value))


def secret_values(data, names=(), known=()):
    """Every secret value in ``data`` (host variables, settings, any plain data), as a set of texts. ``names``: keys
    whose value is secret whatever they are called (the roles' ``no_log`` options), and so is a key spelt close to
    one of them, unless it is one of ``known`` (the collection's other variables and keys)."""
    names = frozenset(names)
    known = frozenset(known) - names
    found = set()
    spelt = sorted(names)

    def secret_key(key):
        # A misspelt secret variable is a secret too (vllm_service_api_kye, an entry's api_kye); a variable of the
        # collection that is no secret (vllm_service_api_guard) or names where one is kept (*_file) is not.
        return key in names or names_secret(key) or bool(
            isinstance(key, str) and spelt and key not in known and not NOT_SECRET_NAME.search(key)
            and difflib.get_close_matches(key, spelt, n=1, cutoff=0.8))

    def walk(value, secret, depth):
        if depth > 64:
            return
        if secret:
            found.update(leaf for leaf in _leaves(value) if _worth(leaf))
            return
        if isinstance(value, Mapping):
            for key, item in value.items():
                walk(item, secret_key(key), depth + 1)
        elif isinstance(value, (list, tuple, set, frozenset)):
            items = list(value)
            for index, item in enumerate(items):
                walk(item, False, depth + 1)
                if _flag_takes_secret(item) and index + 1 < len(items):
                    walk(items[index + 1], True, depth + 1)
        elif isinstance(value, str):
            found.update(text_secrets(value))

    walk(data, False, 0)
    return found


def shown_url(url):
    """A URL as a message may show it: credentials in its user part and secret-named query values hidden."""
    text = _URL_USERINFO.sub(SECRET_SHOWN + "@", str(url))
    return _URL_SECRET_PARAM.sub(lambda m: "%s=%s" % (m.group(1), SECRET_SHOWN), text)


def redact_text(text, secrets=()):
    """``text`` with every secret of ``secrets`` and every secret its shapes show hidden."""
    text = str(text)
    for secret in sorted(set(s for s in secrets if _worth(s)) | text_secrets(text), key=len, reverse=True):
        text = text.replace(secret, SECRET_SHOWN)
    return shown_url(text)


def redact(value, secrets=()):
    """``value`` (text, a list, a mapping, any plain data) with every secret hidden: each value of ``secrets`` wherever
    it appears, the value under a secret-named key, the argv item after a secret flag, and what ``redact_text`` hides in
    every text. Other values are returned unchanged (the same types: a tuple stays a tuple)."""
    secrets = sorted(set(s for s in secrets if _worth(s)), key=len, reverse=True)

    def hide_all(item):
        if isinstance(item, Mapping):
            return dict((key, hide_all(sub)) for key, sub in item.items())
        if isinstance(item, (list, tuple)):
            return type(item)(hide_all(sub) for sub in item)
        if item is None or isinstance(item, bool) or not _worth(str(item)):
            return item
        return SECRET_SHOWN

    def walk(item, depth):
        if depth > 64:
            return SECRET_SHOWN
        if isinstance(item, Mapping):
            return dict((walk(key, depth + 1), hide_all(sub) if names_secret(key) else walk(sub, depth + 1))
                        for key, sub in item.items())
        if isinstance(item, (list, tuple)):
            out = []
            for index, sub in enumerate(item):
                after_flag = index > 0 and _flag_takes_secret(item[index - 1])
                out.append(hide_all(sub) if after_flag else walk(sub, depth + 1))
            return type(item)(out)
        if isinstance(item, str):
            return redact_text(item, secrets)
        if item is not None and not isinstance(item, bool) and str(item) in secrets:
            return SECRET_SHOWN
        return item

    return walk(value, 0)


def refusal(text, *inputs):
    """A refusal's text (a filter's or a module's error) as it may be printed: every secret of its ``inputs`` (what
    the caller was given: a model entry, an environment, argv) and every secret its shapes show hidden."""
    return redact_text(text, secret_values(list(inputs)))
