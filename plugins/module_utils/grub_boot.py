# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The next boot, computed the way GRUB computes it (Ubuntu 24.04 "noble", grub2 2.12, EFI).

Read against the sources of Ubuntu's grub2 2.12 package (tests/fixtures/grub/README.md names them):

- ``update-grub`` (grub-mkconfig) sources ``/etc/default/grub``, then ``/etc/default/grub.d/*.cfg`` in glob order;
  an empty ``GRUB_DEFAULT`` is ``0``. ``/etc/grub.d/00_header`` writes ``set default="${next_entry}"`` when the
  grubenv has a ``next_entry`` (grub-reboot; cleared as it is used), else ``set default="<GRUB_DEFAULT>"``, with
  ``saved`` written as ``${saved_entry}``.
- ``/etc/grub.d/10_linux`` sorts the kernels newest first (``version_sort -r``, which on noble is
  ``/usr/lib/grub/grub-sort-version``: dpkg's version order, ``GRUB_FLAVOUR_ORDER`` ranked first) and writes a
  top-level entry ``Ubuntu`` for the newest, then a submenu ``Advanced options for Ubuntu`` with, per kernel, an
  entry and a recovery entry (``GRUB_DISABLE_SUBMENU=y``: no ``Ubuntu`` entry and no submenu, every kernel's entries
  at the top; ``GRUB_DISABLE_RECOVERY=true``: no recovery entries).
- At boot (grub-core/normal/menu.c) ``default`` picks a top-level item: a number (``grub_strtoul``: leading digits,
  ``0x`` hex, ``0`` octal), else the first item whose title or ``--id`` equals the text up to the first ``>``
  (``>>`` stands for a ``>``). Out of range or unmatched: item 0. A submenu picked this way is entered with
  ``default`` set to the text after that ``>``, or unset, which is its first entry.

A menu is a list of items: ``{"kind": "entry", "title", "id", "linux", "release", "args", "initrd"}`` or
``{"kind": "submenu", "title", "id", "entries": [entries]}``; ``id`` is None where the item has no ``--id`` (GRUB
then matches the title). Entries that :func:`predict` builds also carry ``type`` (simple, advanced or recovery) and
``root`` (the ``root=`` value of their kernel command line).

Not verified on a DGX Spark (no grub.cfg of one was at hand; the fixtures are written from the scripts): that DGX OS
runs Ubuntu's grub2 build unchanged (Ubuntu's arm64 build options: quiet boot, ``recordfail``, ``$vt_handoff``,
``recovery nomodeset``), that its /etc/os-release NAME (GRUB_DISTRIBUTOR) is ``Ubuntu``, that friendly-recovery is
installed (recovery entries say ``recovery``; without it ``single``), that /boot is on the root file system (else
kernel paths are ``/vmlinuz-*``), and that its grub2 is 2.12-1ubuntu7 or later (earlier noble builds split the
sorted line at its last ``-`` in dpkg fashion, which orders a few unusual release strings differently). The ids'
device part is grub-probe's file system UUID of the root device (``GRUB_DISABLE_UUID=true``: the device name), as
10_linux's grub_get_device_id says; public DGX Spark GRUB_DEFAULT values show the root UUID there.

Pure Python, no Ansible imports.
"""

from __future__ import annotations

import glob
import os
import re

GRUBENV_SIGNATURE = "# GRUB Environment Block\n"
# Stands for the boot device's file system UUID (grub-probe --target=fs_uuid) in the ids predict() writes, where
# the caller passes none (device_id() reads the real one from a grub.cfg).
DEVICE_ID_PLACEHOLDER = "BOOT-DEVICE-ID"
UEFI_FIRMWARE_TITLE = "UEFI Firmware Settings"
UEFI_FIRMWARE_ID = "uefi-firmware"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KERNEL_FILE = re.compile(r"^(?:vmlinu[xz]|kernel)-")
_KERNEL_COMMANDS = ("linux", "linuxefi", "linux16")
_INITRD_COMMANDS = ("initrd", "initrdefi", "initrd16")
_SH_RESERVED = ("then", "else", "elif", "do", "fi", "done", "esac", "{", "}", "!")
_GRUB_SPACE = " \t\n\r\f\v"


# --- version order -------------------------------------------------------------------------------------------

def _char_order(char):
    """dpkg's (and GNU sort -V's) weight of one non-digit character: ``~`` before the end of the string, the end
    before letters, letters before everything else."""
    if char == "~":
        return -1
    if "a" <= char <= "z" or "A" <= char <= "Z":
        return ord(char)
    return ord(char) + 256


def version_key(release):
    """Sort key ordering strings as GNU ``sort -V`` and dpkg compare them (``verrevcmp``): alternating runs of
    non-digits, compared by character with :func:`_char_order`, and of digits, compared as numbers. So
    ``6.17.0-1014-nvidia`` > ``6.11.0-1016-nvidia``, ``7.0.0-1019-nvidia`` > ``6.17.0-1100-nvidia`` and
    ``6.8.0-100-generic`` > ``6.8.0-99-generic``. (sort -V also sets a trailing file suffix such as ``.tar.gz``
    aside first; kernel release strings have none.)"""
    text = str(release)
    pairs, i = [], 0
    while i < len(text):
        j = i
        while j < len(text) and not "0" <= text[j] <= "9":
            j += 1
        k = j
        while k < len(text) and "0" <= text[k] <= "9":
            k += 1
        # The 0 closing each run stands for "end of run", which sorts after "~" and before any other character.
        pairs.append((tuple(_char_order(c) for c in text[i:j]) + (0,), int(text[j:k]) if k > j else 0))
        i = k
    # A string that ends compares as if it went on with empty runs: this pair is that padding.
    pairs.append(((0,), 0))
    return tuple(pairs)


def _flavour_rank(release, flavour_order):
    """Position of RELEASE's flavour in GRUB_FLAVOUR_ORDER (its length when unlisted), as grub-sort-version matches
    it: each flavour is a regular expression that must end the line ``<path> 2`` after a ``-``."""
    line = "/boot/vmlinuz-" + _sort_line(release)
    for index, flavour in enumerate((flavour_order or "").split()):
        if re.match(r"[\s\S]*-%s(\s*\d*)$" % flavour, line):
            return index
    return len((flavour_order or "").split())


def _sort_line(release):
    """The text 10_linux hands to version_sort for a kernel: ``<release> 2``, ``.old`` kernels as ``<release> 1``
    (the common ``/boot/vmlinuz-`` prefix left out)."""
    if release.endswith(".old"):
        return release[:-4] + " 1"
    return release + " 2"


def version_sort(releases, reverse=False, flavour_order=""):
    """RELEASES in the order of grub-mkconfig_lib's ``version_sort`` (oldest first; ``reverse``: newest first, as
    10_linux lists them). On noble that is ``/usr/lib/grub/grub-sort-version`` (grub2 2.12-1ubuntu7 and later):
    kernels whose flavour GRUB_FLAVOUR_ORDER names rank above all others, the first named highest; within a rank,
    :func:`version_key` order."""
    return sorted(releases, reverse=reverse,
                  key=lambda r: (-_flavour_rank(r, flavour_order), version_key("/boot/vmlinuz-" + _sort_line(r))))


def release_of(path):
    """The kernel release a kernel file or symlink target names (``/boot/vmlinuz-6.17.0-1014-nvidia`` ->
    ``6.17.0-1014-nvidia``, as 10_linux cuts it), or None for any other file (memtest, an EFI binary)."""
    if not path:
        return None
    name = os.path.basename(str(path))
    if not _KERNEL_FILE.match(name):
        return None
    return re.sub(r"^[^0-9]*-", "", name, count=1) or None


# --- /etc/default/grub ----------------------------------------------------------------------------------------

def _closing(text, start, opening, closing):
    """The index of the bracket that closes the one at TEXT[start] (nested pairs counted), or len(TEXT)."""
    depth, j = 0, start
    while j < len(text):
        if text[j] == opening:
            depth += 1
        elif text[j] == closing:
            depth -= 1
            if depth == 0:
                break
        j += 1
    return j


def _sh_param(text, i):
    """Parse the parameter expansion at TEXT[i] == '$' -> (segment or None, next index). Segments: ``("var", name,
    op, word)`` and ``("cmd", raw)`` (command or arithmetic substitution, never run)."""
    nxt = text[i + 1:i + 2]
    if nxt == "(":
        j = _closing(text, i + 1, "(", ")")
        return ("cmd", text[i:j + 1]), j + 1
    if nxt == "{":
        j = _closing(text, i + 1, "{", "}")
        inner = text[i + 2:j]
        match = _NAME.match(inner) or re.match(r"[0-9#?$!@*-]", inner)
        if not match:
            return ("cmd", text[i:j + 1]), j + 1
        rest = inner[match.end():]
        op = re.match(r":?[-=+?]", rest)
        if rest and not op:
            return ("cmd", text[i:j + 1]), j + 1
        return ("var", match.group(0), op.group(0) if op else "", rest[op.end():] if op else ""), j + 1
    match = _NAME.match(text, i + 1) or re.compile(r"[0-9#?$!@*-]").match(text, i + 1)
    if not match:
        return None, i + 1
    return ("var", match.group(0), "", ""), match.end()


def _sh_expansion(text, i, quoted):
    """The segment of the ``$...`` or the backquoted command at TEXT[i] (a lone ``$`` is itself), and where it
    ends."""
    if text[i] == "$":
        segment, end = _sh_param(text, i)
        return segment or ("lit", "$", quoted), end
    j = text.find("`", i + 1)
    j = len(text) if j < 0 else j
    return ("cmd", text[i:j + 1]), j + 1


def _sh_commands(text):
    """Split POSIX shell TEXT into simple commands: lists of words, each word a list of segments ``("lit", text,
    quoted)``, ``("var", ...)`` or ``("cmd", raw)``. Enough of the shell for /etc/default/grub: quotes, backslashes,
    comments, parameter expansion; control structures are only split into their commands."""
    commands, words, word = [], [], []
    i, n = 0, len(text)

    def add(segment):
        if segment[0] == "lit" and word and word[-1][0] == "lit" and word[-1][2] == segment[2]:
            word[-1] = ("lit", word[-1][1] + segment[1], segment[2])
        else:
            word.append(segment)

    def end_word():
        if word:
            words.append(list(word))
            del word[:]

    def end_command():
        end_word()
        if words:
            commands.append(list(words))
            del words[:]

    def escaped(i):
        """Add the character the backslash at TEXT[i] quotes (nothing for a line continuation); where it ends."""
        if text[i + 1:i + 2] != "\n":
            add(("lit", text[i + 1:i + 2], True))
        return i + 2

    def plain(i, quoted):
        """Add the expansion or the character at TEXT[i], inside double quotes or not; where it ends."""
        if text[i] in "$`":
            segment, i = _sh_expansion(text, i, quoted)
            add(segment)
            return i
        add(("lit", text[i], quoted))
        return i + 1

    while i < n:
        c = text[i]
        if c in " \t":
            end_word()
            i += 1
        elif c in "\n;&|()":
            end_command()
            i += 1
        elif c == "#" and not word:
            while i < n and text[i] != "\n":
                i += 1
        elif c == "\\":
            i = escaped(i)
        elif c == "'":
            j = text.find("'", i + 1)
            j = n if j < 0 else j
            add(("lit", text[i + 1:j], True))
            i = j + 1
        elif c == '"':
            add(("lit", "", True))
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and text[i + 1:i + 2] in ('"', "\\", "$", "`", "\n"):
                    i = escaped(i)
                else:
                    i = plain(i, True)
            i += 1
        else:
            i = plain(i, False)
    end_command()
    return commands


def _sh_expand(segments, values):
    """The text of a word in an assignment (no field splitting, no globbing). Unset variables are empty; command
    substitutions are kept as written, since they cannot be run here."""
    out = []
    for segment in segments:
        if segment[0] == "lit":
            out.append(segment[1])
        elif segment[0] == "cmd":
            out.append(segment[1])
        else:
            dummy, name, op, word = segment
            value = values.get(name)
            if op == "":
                out.append(value or "")
                continue
            word_text = _sh_expand(_sh_commands('"%s"' % word.replace('"', '\\"'))[0][0], values) if word else ""
            is_set = value is not None and (value != "" or ":" not in op)
            if op.endswith("+"):
                out.append(word_text if is_set else "")
            elif is_set:
                out.append(value)
            else:
                if op.endswith("="):
                    values[name] = word_text
                out.append(word_text)
    return "".join(out)


def _sh_assignment(word):
    """(name, value segments) when WORD is ``NAME=...`` with an unquoted name, else None."""
    if not word or word[0][0] != "lit" or word[0][2]:
        return None
    match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", word[0][1])
    if not match:
        return None
    rest = word[0][1][match.end():]
    return match.group(1), ([("lit", rest, False)] if rest else []) + word[1:]


def _plain(word):
    """The text of a word made of literal segments only, else None."""
    if all(segment[0] == "lit" for segment in word):
        return "".join(segment[1] for segment in word)
    return None


def read_defaults(texts):
    """The variables of /etc/default/grub as grub-mkconfig sees them, from TEXTS: the text of /etc/default/grub
    followed by those of /etc/default/grub.d/*.cfg in the order they are sourced (:func:`defaults_paths`); one
    string is taken as a single file. Later assignments override earlier ones; ``$VAR`` and ``${VAR}`` (also
    ``${VAR:-word}`` and the like) expand to what was assigned before; quotes, backslashes, comments and an
    ``export`` prefix are read as the shell reads them. Command substitutions are not run: such a value keeps them
    as written (Ubuntu's ``GRUB_DISTRIBUTOR`` is one). Assignments inside ``if`` blocks count as if their condition
    held; other commands are ignored. ``GRUB_DEFAULT`` is ``"0"`` when unset or empty, as in 00_header."""
    if isinstance(texts, str):
        texts = [texts]
    values = {}
    for text in texts:
        for command in _sh_commands(text or ""):
            while command and _plain(command[0]) in _SH_RESERVED:
                command = command[1:]
            exported = bool(command) and _plain(command[0]) in ("export", "readonly")
            if exported:
                command = command[1:]
            assignments = []
            for word in command:
                assignment = _sh_assignment(word)
                if assignment is None:
                    if not exported:
                        # NAME=value before a command only sets the command's environment.
                        assignments = []
                        break
                    continue
                assignments.append(assignment)
            for name, segments in assignments:
                values[name] = _sh_expand(segments, values)
    if not values.get("GRUB_DEFAULT"):
        values["GRUB_DEFAULT"] = "0"
    return values


def defaults_paths(etc_default="/etc/default"):
    """The files grub-mkconfig sources, in its order: ``grub``, then ``grub.d/*.cfg`` sorted (dash's glob order,
    byte order in the C locale); only those that exist."""
    paths = [os.path.join(etc_default, "grub")]
    paths += sorted(glob.glob(os.path.join(etc_default, "grub.d", "*.cfg")))
    return [path for path in paths if os.path.isfile(path)]


def load_defaults(etc_default="/etc/default"):
    """:func:`read_defaults` of the files :func:`defaults_paths` lists."""
    texts = []
    for path in defaults_paths(etc_default):
        with open(path, encoding="utf-8", errors="replace") as handle:
            texts.append(handle.read())
    return read_defaults(texts)


# --- /boot/grub/grubenv ---------------------------------------------------------------------------------------

def read_grubenv(text):
    """The variables of /boot/grub/grubenv (``saved_entry``, ``next_entry``, ``recordfail`` ...) as GRUB's
    load_env reads them: after the ``# GRUB Environment Block`` line, ``name=value`` lines with ``\\`` escaping
    ``\\`` and newline; lines starting with ``#`` (the padding to 1024 bytes) are skipped; a block without that
    first line, or a last line without its newline, yields nothing (of that line)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    if not text or not text.startswith(GRUBENV_SIGNATURE):
        return {}
    values, p, n = {}, len(GRUBENV_SIGNATURE), len(text)
    while p < n:
        if text[p] != "#":
            equals = text.find("=", p)
            if equals < 0:
                break
            q, value = equals + 1, []
            while q < n and text[q] != "\n":
                value.append(text[q + 1] if text[q] == "\\" and q + 1 < n else text[q])
                q += 2 if text[q] == "\\" else 1
            if q >= n:
                break
            values[text[p:equals]] = "".join(value)
            p = q + 1
            continue
        while p < n and text[p] != "\n":
            p += 2 if text[p] == "\\" else 1
        p += 1
    return values


# --- /boot/grub/grub.cfg --------------------------------------------------------------------------------------

class _Word(object):
    """One word of GRUB script: its text with quotes removed and variables as written; ``var`` is the variable's
    name when the word is nothing but one unquoted variable."""

    __slots__ = ("text", "var")

    def __init__(self, text, var=None):
        self.text, self.var = text, var


def _grub_tokens(text):
    """GRUB script TEXT as tokens: _Word, ";" (end of a command: newline or ``;``), "{" and "}" (standalone)."""
    tokens, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r":
            i += 1
            continue
        if c in "\n;":
            tokens.append(";")
            i += 1
            continue
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c in "{}" and (i + 1 >= n or text[i + 1] in " \t\r\n;"):
            tokens.append(c)
            i += 1
            continue
        parts, quoted = [], False
        while i < n and text[i] not in " \t\r\n;":
            c = text[i]
            if c == "\\":
                if text[i + 1:i + 2] != "\n":
                    parts.append(text[i + 1:i + 2])
                quoted = True
                i += 2
            elif c == "'":
                j = text.find("'", i + 1)
                j = n if j < 0 else j
                parts.append(text[i + 1:j])
                quoted = True
                i = j + 1
            elif c == '"':
                i += 1
                while i < n and text[i] != '"':
                    if text[i] == "\\" and text[i + 1:i + 2] in ('"', "\\", "$", "\n"):
                        if text[i + 1] != "\n":
                            parts.append(text[i + 1])
                        i += 2
                    else:
                        parts.append(text[i])
                        i += 1
                quoted = True
                i += 1
            else:
                parts.append(c)
                i += 1
        word = "".join(parts)
        match = None if quoted else re.match(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$", word)
        tokens.append(_Word(word, (match.group(1) or match.group(2)) if match else None))
    return tokens


def _menu_header(kind, words):
    """The item a ``menuentry``/``submenu`` command line declares: options as GRUB's argument parser takes them
    (``--class``, ``--users``, ``--hotkey``, ``--id`` with a value, ``--unrestricted``), the title first of the
    other arguments. ``$menuentry_id_option`` is ``--id`` (set so by 00_header on GRUB 2.00 and later); other
    variables in the header are taken as unset."""
    args = []
    for word in words[1:]:
        if word.var is not None:
            if word.var == "menuentry_id_option":
                args.append("--id")
            continue
        args.append(word.text)
    title, item_id, i, options = None, None, 0, True
    while i < len(args):
        arg = args[i]
        if options and arg == "--":
            options = False
        elif options and arg.startswith("--"):
            name, has_value, value = arg.partition("=")
            if name in ("--class", "--users", "--hotkey", "--id"):
                if not has_value:
                    i += 1
                    value = args[i] if i < len(args) else ""
                if name == "--id":
                    item_id = value
        elif title is None:
            title = arg
        i += 1
    return {"kind": "entry" if kind == "menuentry" else "submenu", "title": title or "", "id": item_id}


def _entry_body(item, commands):
    """Fill an entry's kernel, release, arguments and initrds from its first ``linux`` and ``initrd`` commands."""
    item.update({"linux": None, "release": None, "args": None, "initrd": []})
    for command in commands:
        name = command[0].text
        if name in _KERNEL_COMMANDS and item["linux"] is None and len(command) > 1:
            item["linux"] = command[1].text
            item["release"] = release_of(command[1].text)
            item["args"] = " ".join(word.text for word in command[2:] if word.text)
        elif name in _INITRD_COMMANDS and not item["initrd"]:
            item["initrd"] = [word.text for word in command[1:] if word.text]
    return item


def _grub_block(tokens, pos, nested):
    """Parse TOKENS from POS -> (menu items, commands, next position); ``nested``: stop after the closing brace.
    Items inside ``if`` blocks count (as GRUB registers them when the condition holds: the UEFI firmware entry is
    one); those inside ``function`` bodies do not."""
    items, commands, words = [], [], []
    while pos < len(tokens):
        token = tokens[pos]
        pos += 1
        if isinstance(token, _Word):
            words.append(token)
        elif token == ";":
            if words:
                commands.append(words)
            words = []
        elif token == "{":
            head, words = words, []
            inner_items, inner_commands, pos = _grub_block(tokens, pos, True)
            name = head[0].text if head else ""
            if name == "menuentry":
                items.append(_entry_body(_menu_header(name, head), inner_commands))
            elif name == "submenu":
                item = _menu_header(name, head)
                item["entries"] = inner_items
                items.append(item)
        else:
            if words:
                commands.append(words)
            if nested:
                return items, commands, pos
            words = []
    if words:
        commands.append(words)
    return items, commands, pos


def parse_grub_cfg(text):
    """The menu of a grub.cfg as GRUB builds it: top-level items in order, submenus with their entries (see the
    module docstring for the shapes). An entry's ``linux`` is the path of its first ``linux`` command, ``release``
    the release in it (None for memtest and other non-kernel files), ``args`` the words after the path joined by
    single spaces, with GRUB variables such as ``$vt_handoff`` left as written; ``initrd`` the paths of its first
    ``initrd`` command. Entries without a kernel (``UEFI Firmware Settings``) have ``linux``, ``release`` and
    ``args`` None."""
    return _grub_block(_grub_tokens(text or ""), 0, False)[0]


def parse_title_corrections(text):
    """{old title: replacement} of the title-correction lines 10_linux writes when GRUB_DEFAULT named a kernel by
    its pre-2.00 title (``if [ "x$default" = 'Ubuntu, with Linux X' ]; then default='Advanced options for
    Ubuntu>Ubuntu, with Linux X'; fi``); :func:`resolve` applies them to ``default``."""
    commands = _grub_block(_grub_tokens(text or ""), 0, False)[1]
    corrections = {}
    for first, second in zip(commands, commands[1:]):
        texts = [word.text for word in first]
        if len(texts) == 6 and texts[:4] == ["if", "[", "x$default", "="] and texts[5] == "]" \
                and len(second) == 2 and second[0].text == "then" and second[1].text.startswith("default="):
            corrections[texts[4]] = second[1].text[len("default="):]
    return corrections


def parse_cfg_default(text):
    """The GRUB_DEFAULT a grub.cfg was written with (00_header's ``set default="..."`` when there is no
    ``next_entry``): ``"saved"`` for ``${saved_entry}``, else the value; None when the file sets none. At boot this
    one counts, not /etc/default/grub: an edit there takes effect with the next update-grub."""
    for command in _grub_block(_grub_tokens(text or ""), 0, False)[1]:
        if len(command) == 2 and command[0].text == "set" and command[1].text.startswith("default="):
            value = command[1].text[len("default="):]
            if value in ("${next_entry}", "$next_entry"):
                continue
            return "saved" if value in ("${saved_entry}", "$saved_entry") else value
    return None


def device_id(menu):
    """The boot device id 10_linux put in the menu's ids (``gnulinux-simple-<id>``, ``gnulinux-advanced-<id>``: the
    root file system's UUID), or None."""
    for item in menu or ():
        match = re.match(r"^gnulinux-(?:simple|advanced)-(.+)$", item.get("id") or "")
        if match:
            return match.group(1)
    return None


# --- which entry boots ----------------------------------------------------------------------------------------

def _grub_strtoul(text):
    """(number, error) as grub_strtoul(text, NULL, 0) reads it: spaces skipped, ``0x`` hex, a leading ``0`` octal,
    digits up to the first other character; error ``"bad"`` without a digit, ``"range"`` past 64 bits."""
    i, n = 0, len(text)
    while i < n and text[i] in _GRUB_SPACE:
        i += 1
    base = 10
    if text[i:i + 1] == "0":
        if text[i + 1:i + 2] == "x":
            base, i = 16, i + 2
        elif "0" <= text[i + 1:i + 2] <= "7" and text[i + 1:i + 2]:
            base = 8
    number, found = 0, False
    while i < n:
        c = text[i].lower()
        if "0" <= c <= "9":
            digit = ord(c) - ord("0")
        elif "a" <= c <= "z":
            digit = ord(c) - ord("a") + 10
        else:
            break
        if digit >= base:
            break
        found = True
        number = number * base + digit
        if number >= 1 << 64:
            return None, "range"
        i += 1
    return (number, None) if found else (None, "bad")


def _spec_part(item):
    """How ``default``/``next_entry`` names ITEM: its ``--id``, else its title (``>`` written ``>>``)."""
    return item["id"] if item.get("id") else item["title"].replace(">", ">>")


def _is_recovery(entry):
    words = (entry.get("args") or "").split()
    return "recovery" in words or "single" in words


def entry_spec(menu, release, lasting=False):
    """What names the entry of MENU (:func:`parse_grub_cfg`) that boots RELEASE normally (not a recovery entry), for
    ``grub-reboot``/``next_entry`` or GRUB_DEFAULT: ``<id>`` at the top level, ``<submenu id>><entry id>`` inside
    a submenu (titles where an item has no id), the first such entry in GRUB's order; None when none boots it.
    :func:`resolve` with it as ``next_entry`` boots that entry. LASTING (a ``saved_entry``, GRUB's default from now
    on): the entry of the submenu first, whose id names the kernel (``gnulinux-<release>-advanced-<uuid>``); the
    top-level entry boots whichever kernel is newest, another one once a newer kernel is installed."""
    for item in menu or []:
        if item["kind"] == "entry" and item.get("release") == release and not _is_recovery(item) and not lasting:
            return _spec_part(item)
        if item["kind"] == "submenu":
            for entry in item.get("entries") or []:
                if entry["kind"] == "entry" and entry.get("release") == release and not _is_recovery(entry):
                    return "%s>%s" % (_spec_part(item), _spec_part(entry))
    return entry_spec(menu, release) if lasting else None


def _menuentry_eq(ident, spec):
    """GRUB's menuentry_eq: IDENT equals SPEC up to SPEC's first ``>`` that is not ``>>`` (``>>`` matches ``>``)."""
    a, b = (ident or "") + "\0", spec + "\0\0"
    i = j = 0
    while True:
        if b[j] == ">" and b[j + 1] != ">":
            return a[i] == "\0"
        if b[j] == ">":
            j += 1
        if a[i] != b[j]:
            return False
        if a[i] == "\0":
            return True
        i += 1
        j += 1


def _entry_number(items, spec):
    """get_entry_number: the index SPEC picks among ITEMS, or -1 (no spec, no match, a number past 64 bits); a
    number is returned as GRUB's ``int`` holds it and may be out of range."""
    if spec is None:
        return -1
    number, error = _grub_strtoul(spec)
    if error == "bad":
        for index, item in enumerate(items):
            if _menuentry_eq(item.get("title"), spec) or _menuentry_eq(item.get("id") or item.get("title"), spec):
                return index
        return -1
    if error:
        return -1
    number &= 0xFFFFFFFF
    return number - (1 << 32) if number >= 1 << 31 else number


def _after_first_gt(spec):
    """What GRUB sets ``default`` to on entering a submenu: SPEC after its first ``>`` that is not ``>>``, or None
    (unset) when there is none or nothing follows it."""
    i = 0
    while i < len(spec):
        if spec[i] == ">" and spec[i + 1:i + 2] == ">":
            i += 2
            continue
        if spec[i] == ">":
            break
        i += 1
    return spec[i + 1:] if i + 1 < len(spec) else None


def resolve(menu, default="0", env=None, corrections=None):
    """Which entry GRUB boots from MENU (:func:`parse_grub_cfg`), with DEFAULT the GRUB_DEFAULT the grub.cfg was
    written with (:func:`parse_cfg_default`, or :func:`read_defaults` before an update-grub), ENV the grubenv
    (:func:`read_grubenv`) and CORRECTIONS those of :func:`parse_title_corrections`.

    ``next_entry`` (grub-reboot, one boot) wins; after a failed initrd-less boot (``initrdfail=1``) 00_header takes
    it from ``prev_entry``. Else GRUB_DEFAULT: ``saved`` is ``saved_entry``; a number is the Nth top-level item (a
    submenu is one item); a title or id names one; ``a>b`` walks into a submenu; a submenu without a further ``>``
    boots its first entry. What names nothing, or a number out of range, boots item 0 of that level (of the submenu
    when the path failed inside one).

    -> None for an empty menu, else ``{"entry": the entry dict or None (an empty submenu), "by": "next_entry" |
    "saved_entry" | "GRUB_DEFAULT" | "fallback", "source": the variable the request came from, "requested": its
    text, "path": indexes joined by ">" ("1>2"), "reason": why "fallback" (else None)}``."""
    if not menu:
        return None
    env = env or {}
    next_entry = env.get("next_entry", "")
    if env.get("initrdfail") == "1":
        next_entry = env.get("prev_entry", "")
    default = "0" if default is None or default == "" else str(default)
    if next_entry:
        source, spec = "next_entry", next_entry
    elif default == "saved":
        source, spec = "saved_entry", env.get("saved_entry", "")
    else:
        source, spec = "GRUB_DEFAULT", default
    requested = spec
    if corrections and spec in corrections:
        spec = corrections[spec]
    items, path, reason, rest = menu, [], None, spec
    while True:
        index = _entry_number(items, rest)
        if index < 0 or index >= len(items):
            if rest is not None and reason is None:
                where = "the menu" if not path else "submenu " + ">".join(str(i) for i in path)
                reason = ("%s is empty: GRUB boots item 0 of %s" % (source, where) if not requested else
                          "%s %r names no item of %s: GRUB boots its item 0" % (source, requested, where))
            index = 0
        path.append(index)
        item = items[index]
        if item["kind"] != "submenu":
            break
        rest = _after_first_gt(rest) if rest is not None else None
        items = item.get("entries") or []
        if not items:
            item = None
            break
    return {"entry": item, "by": "fallback" if reason else source, "source": source, "requested": requested,
            "path": ">".join(str(i) for i in path), "reason": reason}


# --- the menu the next update-grub writes -----------------------------------------------------------------------

def _os_name(defaults, os_name):
    """10_linux's OS: GRUB_DISTRIBUTOR (OS_NAME when it is a command substitution, as Ubuntu's is: NAME of
    /etc/os-release), plus `` GNU/Linux`` unless it is Ubuntu or Kubuntu; ``GNU/Linux`` when empty."""
    distributor = defaults.get("GRUB_DISTRIBUTOR", "")
    if "`" in distributor or "$(" in distributor:
        distributor = os_name
    if not distributor:
        return "GNU/Linux"
    return distributor if distributor in ("Ubuntu", "Kubuntu") else distributor + " GNU/Linux"


def _kernel_args(kind, defaults, machine):
    """The words 10_linux writes after ``root=... ro`` for an entry of KIND (Ubuntu's build: ubuntu_recovery and,
    but on ppc64el and riscv64, vt_handoff)."""
    linux = defaults.get("GRUB_CMDLINE_LINUX", "")
    if kind == "recovery":
        recovery = defaults.get("GRUB_CMDLINE_LINUX_RECOVERY") or "recovery"
        recovery += " nomodeset"
        if re.match(r"^(i.86|x86_64)$", machine or ""):
            recovery += " dis_ucode_ldr"
        return "%s %s" % (recovery, linux)
    linux_default = defaults.get("GRUB_CMDLINE_LINUX_DEFAULT", "")
    if machine not in ("ppc64le", "riscv64"):
        linux_default += " $vt_handoff" * linux_default.split().count("splash")
    return "%s %s" % (linux, linux_default)


def _line_words(text):
    """The words GRUB reads from one line of grub.cfg."""
    return [token.text for token in _grub_tokens(text) if isinstance(token, _Word) and token.text]


def _predicted_entry(kind, os_name, release, defaults, dev_id, root, machine):
    title = "%s, with Linux %s" % (os_name, release)
    if kind == "recovery":
        title += " (%s)" % (defaults.get("GRUB_RECOVERY_TITLE") or "recovery mode")
    elif kind == "simple":
        title = os_name
    entry_id = "gnulinux-simple-%s" % dev_id if kind == "simple" else "gnulinux-%s-%s-%s" % (release, kind, dev_id)
    line = "root=%s ro %s" % (root, _kernel_args(kind, defaults, machine))
    return {"kind": "entry", "title": title, "id": entry_id, "linux": "/boot/vmlinuz-%s" % release,
            "release": release, "args": " ".join(_line_words(line)), "initrd": ["/boot/initrd.img-%s" % release],
            "type": kind, "root": root}


def build_menu(releases, defaults, dev_id=DEVICE_ID_PLACEHOLDER, root=None, os_name="Ubuntu", machine="aarch64",
               uefi_firmware=True):
    """The menu update-grub would write for kernels RELEASES (all in /boot, /boot on the root file system) and
    DEFAULTS (:func:`read_defaults`), as noble's 10_linux and 30_uefi-firmware write it. DEV_ID is the boot
    device id the ids carry (:func:`device_id` of the current grub.cfg), ROOT the ``root=`` value (default
    ``UUID=<dev_id>``), MACHINE ``uname -m`` (x86 recovery entries add ``dis_ucode_ldr``). Not modelled: other
    /etc/grub.d scripts (memtest86+ on x86, os-prober, 40_custom), btrfs/ZFS roots, GRUB_FORCE_PARTUUID, early
    initrds; the recovery words assume friendly-recovery is installed (``recovery``; without it ``single``)."""
    root = root or "UUID=%s" % dev_id
    name = _os_name(defaults, os_name)
    ordered = version_sort(list(dict.fromkeys(releases)), reverse=True,
                           flavour_order=defaults.get("GRUB_FLAVOUR_ORDER", ""))
    top = defaults.get("GRUB_TOP_LEVEL", "")
    for release in ordered:
        if top and top == "/boot/vmlinuz-%s" % release:
            ordered = [release] + [r for r in ordered if r != release]
            break
    flat = defaults.get("GRUB_DISABLE_SUBMENU", "") in ("y", "yes", "true")
    recovery = defaults.get("GRUB_DISABLE_RECOVERY", "") != "true"
    menu, kernels = [], []
    for release in ordered:
        kernels.append(_predicted_entry("advanced", name, release, defaults, dev_id, root, machine))
        if recovery:
            kernels.append(_predicted_entry("recovery", name, release, defaults, dev_id, root, machine))
    if ordered and not flat:
        menu.append(_predicted_entry("simple", name, ordered[0], defaults, dev_id, root, machine))
        menu.append({"kind": "submenu", "title": "Advanced options for %s" % name,
                     "id": "gnulinux-advanced-%s" % dev_id, "entries": kernels})
    else:
        menu.extend(kernels)
    if uefi_firmware:
        menu.append({"kind": "entry", "title": UEFI_FIRMWARE_TITLE, "id": UEFI_FIRMWARE_ID, "linux": None,
                     "release": None, "args": None, "initrd": []})
    return menu


def _predicted_corrections(menu, defaults, env, os_name):
    """The title corrections 10_linux would write: GRUB_DEFAULT (with ``saved``: the grubenv's saved_entry, as
    grub-mkconfig reads it) equal to a kernel entry's title, or to ``Previous Linux versions>`` and it, becomes
    ``Advanced options for <OS>>title``. 10_linux writes them whether or not the submenu exists."""
    actual = defaults.get("GRUB_DEFAULT", "")
    if actual == "saved":
        actual = (env or {}).get("saved_entry", "")
    if not actual:
        return {}
    entries = []
    for item in menu:
        entries.extend(item.get("entries") or [item])
    for entry in entries:
        if entry.get("type") in ("advanced", "recovery") and \
                actual in (entry["title"], "Previous Linux versions>" + entry["title"]):
            advanced = "Advanced options for %s" % os_name
            return {actual: "%s>%s" % (advanced.replace(">", ">>"), entry["title"].replace(">", ">>"))}
    return {}


def predict(releases, defaults, env=None, **menu_options):
    """The entry GRUB will boot once update-grub has run with kernels RELEASES installed (say, the plan of an apt
    upgrade) and DEFAULTS (:func:`read_defaults`): :func:`build_menu` (MENU_OPTIONS go to it), resolved with
    DEFAULTS' GRUB_DEFAULT and ENV (the grubenv) by :func:`resolve`. GRUB_DEFAULT=0 gives the newest kernel's
    ``Ubuntu`` entry; an id or saved_entry naming a kernel that is gone falls back (inside the submenu: to its first
    entry, the newest kernel). -> :func:`resolve`'s dict plus ``"menu"``, or None without kernels and items."""
    menu = build_menu(releases, defaults, **menu_options)
    corrections = _predicted_corrections(menu, defaults, env, _os_name(defaults, menu_options.get("os_name", "Ubuntu")))
    result = resolve(menu, defaults.get("GRUB_DEFAULT", "0"), env, corrections)
    if result is not None:
        result["menu"] = menu
    return result


def cmdline(entry, defaults=None, machine="aarch64", variables=None, boot_image=False):
    """The kernel command line words ENTRY boots with, from ``root=`` on: a parsed entry's ``args``; for an entry
    :func:`predict` built, recomputed from DEFAULTS when given (GRUB_CMDLINE_LINUX, then GRUB_CMDLINE_LINUX_DEFAULT
    and ``$vt_handoff`` per ``splash``; recovery: ``recovery nomodeset``, x86 ``dis_ucode_ldr``, then
    GRUB_CMDLINE_LINUX). GRUB variables stay as written unless VARIABLES maps them (unmapped ones then expand to
    nothing: at boot ``$vt_handoff`` is ``vt.handoff=7`` when the graphics mode is kept, else empty).
    ``boot_image``: prepend ``BOOT_IMAGE=<kernel path>`` as GRUB's linux loader does (what /proc/cmdline shows).
    None for an entry without a kernel."""
    if not entry or not entry.get("linux"):
        return None
    if defaults is not None and entry.get("type") in ("simple", "advanced", "recovery"):
        kind = "advanced" if entry["type"] == "simple" else entry["type"]
        words = _line_words("root=%s ro %s" % (entry.get("root"), _kernel_args(kind, defaults, machine)))
    else:
        words = _line_words(entry.get("args") or "")
    if variables is not None:
        pattern = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
        words = [w for w in (pattern.sub(lambda m: variables.get(m.group(1) or m.group(2), ""), word)
                             for word in words) if w]
    if boot_image:
        words = ["BOOT_IMAGE=%s" % entry["linux"]] + words
    return words


# --- the next boot of a host ------------------------------------------------------------------------------------

def read_file(path):
    """The text of one of GRUB's files (undecodable bytes replaced), or None where it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _root_of(menu):
    """The ``root=`` value of the first entry in MENU that boots a kernel, or None."""
    stack = list(menu or ())
    while stack:
        item = stack.pop(0)
        if item.get("kind") == "submenu":
            stack[0:0] = list(item.get("entries") or [])
            continue
        for word in cmdline(item) or ():
            if word.startswith("root="):
                return word[len("root="):]
    return None


def installed_kernels(boot_dir="/boot"):
    """The kernel releases whose image is in BOOT_DIR (``vmlinuz-<release>``), oldest first (:func:`version_sort`)."""
    try:
        names = os.listdir(boot_dir)
    except OSError:
        return []
    return version_sort(name[len("vmlinuz-"):] for name in names
                        if name.startswith("vmlinuz-") and not name.endswith(".old"))


# What next_boot computes: the next boot (the grubenv's one-shot next_entry first), the boot after it (GRUB's
# default: GRUB_DEFAULT, with saved its saved_entry), or the newest kernel's entry (item 0 of the menu update-grub
# writes: what GRUB_DEFAULT=0 boots, the kernel an update boots once with os_update_boot_once).
NEXT_BOOT_MODES = ("next", "default", "newest")


def next_boot(boot_dir="/boot", grub_dir=None, etc_default="/etc/default", releases=None, mode="next"):
    """The kernel the next boot of a host starts, and its command line, as GRUB will choose them (MODE ``next``;
    ``default``: the boot after a one-shot next_entry, GRUB's default; ``newest``: item 0 of the menu, the newest
    kernel's entry, whatever GRUB_DEFAULT and the grubenv say).

    RELEASES given (a plan: the kernels installed once an upgrade has run): the menu the upgrade's update-grub will
    write (:func:`predict`) from the defaults under ETC_DEFAULT and the grubenv. Else the host as it is: the entry
    its ``<grub_dir>/grub.cfg`` boots (:func:`resolve`), beside the one an update-grub would make it boot now; they
    differ where grub.cfg is stale (update-grub not run after a kernel came or went, or after /etc/default/grub
    changed).

    -> ``{"release", "cmdline" (words from root= on), "source" ("predicted" | "grub.cfg" | None without a grub.cfg),
    "path", "by", "reason", "predicted" (the release update-grub would boot), "grub_cfg" (its path),
    "grub_cfg_found"}``; ``release`` None where no entry boots a kernel."""
    if mode not in NEXT_BOOT_MODES:
        raise ValueError("next_boot: mode %r is not one of %s" % (mode, ", ".join(NEXT_BOOT_MODES)))
    grub_dir = grub_dir or os.path.join(boot_dir, "grub")
    defaults = load_defaults(etc_default)
    env = read_grubenv(read_file(os.path.join(grub_dir, "grubenv")) or "")
    if mode != "next":
        # the one-shot request and what 00_header makes of a failed initrd-less boot count for one boot only
        env = dict((k, v) for k, v in env.items() if k not in ("next_entry", "prev_entry", "initrdfail"))
    if mode == "newest":
        env, defaults = {}, dict(defaults, GRUB_DEFAULT="0")
    kernels = installed_kernels(boot_dir) if releases is None else list(releases)
    path = os.path.join(grub_dir, "grub.cfg")
    text = read_file(path)
    menu = parse_grub_cfg(text) if text is not None else []
    # The next menu carries this one's device id and root= (an id in GRUB_DEFAULT or saved_entry names them).
    options = dict((k, v) for k, v in (("dev_id", device_id(menu)), ("root", _root_of(menu))) if v)
    predicted = predict(kernels, defaults, env, **options) or {}
    entry = predicted.get("entry") or {}
    result = {"release": entry.get("release"), "cmdline": cmdline(entry, defaults), "source": "predicted",
              "path": predicted.get("path"), "by": predicted.get("by"), "reason": predicted.get("reason"),
              "predicted": entry.get("release"), "grub_cfg": path, "grub_cfg_found": text is not None}
    if releases is not None:
        return result
    if text is None:
        return dict(result, release=None, cmdline=None, source=None, path=None, by=None, reason="no %s" % path)
    default = "0" if mode == "newest" else parse_cfg_default(text) or defaults.get("GRUB_DEFAULT", "0")
    chosen = resolve(menu, default, env, parse_title_corrections(text)) or {}
    entry = chosen.get("entry") or {}
    return dict(result, release=entry.get("release"), cmdline=cmdline(entry), source="grub.cfg",
                path=chosen.get("path"), by=chosen.get("by"), reason=chosen.get("reason"))
