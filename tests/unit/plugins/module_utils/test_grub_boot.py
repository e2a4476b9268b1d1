# -*- coding: utf-8 -*-
"""The next boot as GRUB computes it, read against Ubuntu 24.04-shaped GRUB files (tests/fixtures/grub, README
there): version order, /etc/default/grub, grubenv, grub.cfg, which entry a default picks, and the menu the next
update-grub writes."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import grub_boot

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "grub")
UUID = "3f0c6b9e-8d2a-4c71-9b5e-2a7d41c0e8f5"
NEW, OLD = "6.17.0-1014-nvidia", "6.11.0-1016-nvidia"


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8", newline="") as handle:
        return handle.read()


def advanced(release, kind="advanced"):
    return "gnulinux-advanced-%s>gnulinux-%s-%s-%s" % (UUID, release, kind, UUID)


@pytest.fixture(scope="module")
def menu():
    return grub_boot.parse_grub_cfg(fixture("grub.cfg"))


@pytest.fixture(scope="module")
def defaults():
    return grub_boot.read_defaults([fixture("default-grub"), fixture("grub.d/50-kho.cfg")])


# --- version order -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("newer, older", [
    ("6.17.0-1014-nvidia", "6.11.0-1016-nvidia"),
    ("7.0.0-1019-nvidia", "6.17.0-1100-nvidia"),
    ("6.8.0-100-generic", "6.8.0-99-generic"),
    ("6.17.0-1014-nvidia", "6.17.0-1008-nvidia"),
    ("6.10.0-1-generic", "6.9.0-1-generic"),
    ("6.8.0", "6.8.0~rc7"),
    ("6.8.0-1", "6.8.0"),
    ("6.8.0-1-lowlatency", "6.8.0-1-generic"),
    ("6.8.0-010-generic", "6.8.0-9-generic"),
])
def test_version_key_orders_as_sort_v(newer, older):
    assert grub_boot.version_key(newer) > grub_boot.version_key(older)
    assert grub_boot.version_sort([newer, older]) == [older, newer]
    assert grub_boot.version_sort([older, newer], reverse=True) == [newer, older]


def test_version_sort_compares_the_line_10_linux_hands_it():
    """10_linux sorts "<release> 2": a space sorts after letters, so a release that is another plus letters sorts
    below it in GRUB's order, though sort -V of the bare strings says the opposite."""
    assert grub_boot.version_key("6.8.0-1a") > grub_boot.version_key("6.8.0-1")
    assert grub_boot.version_sort(["6.8.0-1a", "6.8.0-1"], reverse=True) == ["6.8.0-1", "6.8.0-1a"]


def test_version_key_equal_for_equal_strings_and_leading_zeros():
    assert grub_boot.version_key("6.8.0-07-generic") == grub_boot.version_key("6.8.0-7-generic")
    assert grub_boot.version_key("") < grub_boot.version_key("0")


def test_version_sort_is_numeric_not_lexical():
    releases = ["6.8.0-9-generic", "6.8.0-100-generic", "6.8.0-10-generic", "6.11.0-1-generic"]
    assert grub_boot.version_sort(releases, reverse=True) == [
        "6.11.0-1-generic", "6.8.0-100-generic", "6.8.0-10-generic", "6.8.0-9-generic"]


def test_version_sort_ranks_grub_flavour_order_first():
    releases = ["6.8.0-101-generic", "6.8.0-90-lowlatency", "6.8.0-100-generic", "6.8.0-88-lowlatency"]
    assert grub_boot.version_sort(releases, reverse=True, flavour_order="lowlatency") == [
        "6.8.0-90-lowlatency", "6.8.0-88-lowlatency", "6.8.0-101-generic", "6.8.0-100-generic"]
    assert grub_boot.version_sort(releases, reverse=True, flavour_order="generic lowlatency")[0] == "6.8.0-101-generic"
    assert grub_boot.version_sort(releases, reverse=True)[0] == "6.8.0-101-generic"


def test_version_sort_puts_an_old_kernel_after_its_namesake():
    assert grub_boot.version_sort(["6.8.0-1.old", "6.8.0-1", "6.8.0-2"], reverse=True) == [
        "6.8.0-2", "6.8.0-1", "6.8.0-1.old"]


@pytest.mark.parametrize("path, release", [
    ("/boot/vmlinuz-6.17.0-1014-nvidia", "6.17.0-1014-nvidia"),
    ("vmlinuz-6.11.0-1016-nvidia", "6.11.0-1016-nvidia"),
    ("/vmlinux-6.8.0-1-generic", "6.8.0-1-generic"),
    ("/boot/memtest86+x64.efi", None),
    ("/boot/vmlinuz", None),
    (None, None),
])
def test_release_of(path, release):
    assert grub_boot.release_of(path) == release


def test_the_vmlinuz_symlink_follows_the_install_not_grub(tmp_path):
    """The symlink names the kernel installed last; GRUB boots the newest (both from the fixture host)."""
    listing = fixture("boot-older-installed-last.txt")
    link = re.search(r" vmlinuz -> (\S+)", listing).group(1)
    os.symlink(link, str(tmp_path / "vmlinuz"))
    linked = grub_boot.release_of(os.readlink(str(tmp_path / "vmlinuz")))
    text = fixture("grub-older-installed-last.cfg")
    chosen = grub_boot.resolve(grub_boot.parse_grub_cfg(text), grub_boot.parse_cfg_default(text),
                               grub_boot.read_grubenv(fixture("grubenv-new")))
    assert linked == "6.17.0-1008-nvidia"
    assert chosen["entry"]["release"] == NEW
    installed = re.findall(r" vmlinuz-(\S+)$", listing, re.M)
    assert grub_boot.version_sort(installed, reverse=True)[0] == chosen["entry"]["release"] != linked


# --- /etc/default/grub ----------------------------------------------------------------------------------------

def test_read_defaults_of_ubuntu_file_and_drop_in(defaults):
    assert defaults["GRUB_DEFAULT"] == "0"
    assert defaults["GRUB_TIMEOUT_STYLE"] == "hidden"
    assert defaults["GRUB_TIMEOUT"] == "0"
    assert defaults["GRUB_CMDLINE_LINUX"] == ""
    assert defaults["GRUB_CMDLINE_LINUX_DEFAULT"] == "quiet splash kho=off"
    assert defaults["GRUB_DISABLE_OS_PROBER"] == "true"
    # Commented-out settings are not set; the command substitution is kept, not run.
    assert "GRUB_DISABLE_RECOVERY" not in defaults and "GRUB_BADRAM" not in defaults
    assert defaults["GRUB_DISTRIBUTOR"].startswith("`( . /etc/os-release;")


def test_read_defaults_without_the_drop_in():
    assert grub_boot.read_defaults(fixture("default-grub"))["GRUB_CMDLINE_LINUX_DEFAULT"] == "quiet splash"


def test_later_files_override_earlier_ones():
    values = grub_boot.read_defaults([
        "GRUB_DEFAULT=0\nGRUB_TIMEOUT=0\nGRUB_CMDLINE_LINUX=\"a\"\n",
        "GRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX b\"\n",
        "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"${GRUB_CMDLINE_LINUX} c\"\n",
    ])
    assert (values["GRUB_DEFAULT"], values["GRUB_TIMEOUT"], values["GRUB_CMDLINE_LINUX"]) == ("saved", "5", "a b c")


def test_grub_default_is_0_when_unset_or_empty():
    assert grub_boot.read_defaults("GRUB_TIMEOUT=5\n")["GRUB_DEFAULT"] == "0"
    assert grub_boot.read_defaults(['GRUB_DEFAULT="1>2"', 'GRUB_DEFAULT=""'])["GRUB_DEFAULT"] == "0"
    assert grub_boot.read_defaults([])["GRUB_DEFAULT"] == "0"


@pytest.mark.parametrize("text, name, value", [
    ("X=1\nGRUB_A='$X \"q\"'\n", "GRUB_A", '$X "q"'),
    ('X=1\nGRUB_A="$X \'q\' \\$X \\"d\\""\n', "GRUB_A", "1 'q' $X \"d\""),
    ("GRUB_A=plain  # a comment\n", "GRUB_A", "plain"),
    ("# GRUB_A=commented\nGRUB_A=kept\n", "GRUB_A", "kept"),
    ("  #GRUB_A=1\n", "GRUB_A", None),
    ("export GRUB_A=exported\n", "GRUB_A", "exported"),
    ('export GRUB_A="x y" GRUB_B=z\n', "GRUB_B", "z"),
    ("GRUB_A=a\\ b\n", "GRUB_A", "a b"),
    ('GRUB_A="one\n two"\n', "GRUB_A", "one\n two"),
    ('GRUB_A="${UNSET:-fallback} ${UNSET-} $UNSET."\n', "GRUB_A", "fallback  ."),
    ('X=\nGRUB_A="${X:-dflt}|${X-dflt}|${X:+alt}|${Y+alt}"\n', "GRUB_A", "dflt|||"),
    ('GRUB_A=1; GRUB_B=2\n', "GRUB_B", "2"),
    ('GRUB_A=$(echo hi)\n', "GRUB_A", "$(echo hi)"),
    ('if [ -e /x ]; then\n  GRUB_A=inside\nfi\n', "GRUB_A", "inside"),
    ('GRUB_A=for_a_command true\n', "GRUB_A", None),
    ('GRUB_TIMEOUT_STYLE="menu"\r\n', "GRUB_TIMEOUT_STYLE", "menu\r"),
])
def test_read_defaults_reads_shell(text, name, value):
    assert grub_boot.read_defaults(text).get(name) == value


def test_defaults_paths_sources_grub_d_sorted(tmp_path):
    (tmp_path / "grub.d").mkdir()
    (tmp_path / "grub").write_text('GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet"\n')
    (tmp_path / "grub.d" / "90-last.cfg").write_text('GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT c"\n')
    (tmp_path / "grub.d" / "10-first.cfg").write_text('GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT a"\n')
    (tmp_path / "grub.d" / "50-mid.cfg").write_text('GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT b"\n')
    (tmp_path / "grub.d" / "20-ignored.conf").write_text("GRUB_DEFAULT=9\n")
    paths = grub_boot.defaults_paths(str(tmp_path))
    assert [os.path.relpath(p, str(tmp_path)) for p in paths] == [
        "grub", os.path.join("grub.d", "10-first.cfg"), os.path.join("grub.d", "50-mid.cfg"),
        os.path.join("grub.d", "90-last.cfg")]
    values = grub_boot.load_defaults(str(tmp_path))
    assert (values["GRUB_DEFAULT"], values["GRUB_CMDLINE_LINUX_DEFAULT"]) == ("0", "quiet a b c")


# --- grubenv --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["grubenv-new", "grubenv-saved", "grubenv-next"])
def test_grubenv_fixtures_are_padded_as_grub_editenv_writes_them(name):
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        data = handle.read()
    assert len(data) == 1024 and data.startswith(grub_boot.GRUBENV_SIGNATURE.encode()) and data.endswith(b"#")


def test_read_grubenv_fixtures():
    assert grub_boot.read_grubenv(fixture("grubenv-new")) == {}
    assert grub_boot.read_grubenv(fixture("grubenv-saved")) == {"saved_entry": advanced(OLD)}
    assert grub_boot.read_grubenv(fixture("grubenv-next")) == {
        "saved_entry": advanced(OLD), "recordfail": "1", "next_entry": advanced(NEW, "recovery")}
    with open(os.path.join(FIXTURES, "grubenv-saved"), "rb") as handle:
        assert grub_boot.read_grubenv(handle.read()) == {"saved_entry": advanced(OLD)}


def test_read_grubenv_escapes_signature_and_broken_lines():
    head = grub_boot.GRUBENV_SIGNATURE
    assert grub_boot.read_grubenv(head + "a=x\\\\y\\\nz\n####") == {"a": "x\\y\nz"}
    assert grub_boot.read_grubenv(head + "# a=1\nb=2\n###") == {"b": "2"}
    assert grub_boot.read_grubenv(head + "a=1\nb=2") == {"a": "1"}
    assert grub_boot.read_grubenv("saved_entry=1\n") == {}
    assert grub_boot.read_grubenv("") == {}


# --- grub.cfg -------------------------------------------------------------------------------------------------

def test_parse_fixture_top_level(menu):
    assert [(item["kind"], item["title"], item["id"]) for item in menu] == [
        ("entry", "Ubuntu", "gnulinux-simple-" + UUID),
        ("submenu", "Advanced options for Ubuntu", "gnulinux-advanced-" + UUID),
        ("entry", "UEFI Firmware Settings", "uefi-firmware"),
    ]
    simple = menu[0]
    assert simple["linux"] == "/boot/vmlinuz-" + NEW and simple["release"] == NEW
    assert simple["args"] == "root=UUID=%s ro quiet splash kho=off $vt_handoff" % UUID
    assert simple["initrd"] == ["/boot/initrd.img-" + NEW]
    assert (menu[2]["linux"], menu[2]["release"], menu[2]["args"], menu[2]["initrd"]) == (None, None, None, [])
    assert grub_boot.device_id(menu) == UUID


def test_parse_fixture_submenu(menu):
    entries = menu[1]["entries"]
    assert [(e["title"], e["id"], e["release"]) for e in entries] == [
        ("Ubuntu, with Linux " + NEW, "gnulinux-%s-advanced-%s" % (NEW, UUID), NEW),
        ("Ubuntu, with Linux %s (recovery mode)" % NEW, "gnulinux-%s-recovery-%s" % (NEW, UUID), NEW),
        ("Ubuntu, with Linux " + OLD, "gnulinux-%s-advanced-%s" % (OLD, UUID), OLD),
        ("Ubuntu, with Linux %s (recovery mode)" % OLD, "gnulinux-%s-recovery-%s" % (OLD, UUID), OLD),
    ]
    assert entries[1]["args"] == "root=UUID=%s ro recovery nomodeset" % UUID
    assert entries[3]["initrd"] == ["/boot/initrd.img-" + OLD]


def test_parse_cfg_default():
    assert grub_boot.parse_cfg_default(fixture("grub.cfg")) == "0"
    assert grub_boot.parse_cfg_default(fixture("grub-older-installed-last.cfg")) == "saved"
    assert grub_boot.parse_cfg_default('if [ "${next_entry}" ] ; then\n set default="${next_entry}"\nelse\n'
                                       ' set default="gnulinux-advanced-x>gnulinux-1-advanced-x"\nfi\n') == \
        "gnulinux-advanced-x>gnulinux-1-advanced-x"
    assert grub_boot.parse_cfg_default("menuentry 'a' {\n}\n") is None


QUOTING = """
# a comment { with a brace
function helper {
    menuentry 'Inside a function' { true; }
}
menuentry 'It'\\''s "quoted"' --class os --id=dq-id {
\tif [ x$grub_platform = xefi ]; then
\t\tlinux /boot/vmlinuz-6.8.0-1-generic root=/dev/sda1 ro "quoted arg" a\\ b ${extra} # trailing comment
\tfi
\tinitrd /boot/intel-ucode.img /boot/initrd.img-6.8.0-1-generic
}
menuentry "Memory test (memtest86+x64.efi)" --class memtest $menuentry_id_option 'memtest86+' {
\tlinux\t/boot/memtest86+x64.efi
}
menuentry 'No id at all' --unrestricted {
\tlinux16 /boot/memtest86+ia32.bin
}
submenu 'Nested > menu' --id nested {
\tsubmenu 'Inner' {
\t\tmenuentry 'Deep' {
\t\t\tlinux /vmlinuz-1.0-deep
\t\t}
\t}
\tmenuentry 'Second' {
\t\tlinuxefi /vmlinuz-2.0-second quiet
\t}
}
"""


def test_parse_quoting_comments_and_nesting():
    items = grub_boot.parse_grub_cfg(QUOTING)
    assert [(item["kind"], item["title"], item["id"]) for item in items] == [
        ("entry", 'It\'s "quoted"', "dq-id"),
        ("entry", "Memory test (memtest86+x64.efi)", "memtest86+"),
        ("entry", "No id at all", None),
        ("submenu", "Nested > menu", "nested"),
    ]
    assert items[0]["args"] == "root=/dev/sda1 ro quoted arg a b ${extra}"
    assert items[0]["release"] == "6.8.0-1-generic"
    assert items[0]["initrd"] == ["/boot/intel-ucode.img", "/boot/initrd.img-6.8.0-1-generic"]
    assert (items[1]["linux"], items[1]["release"]) == ("/boot/memtest86+x64.efi", None)
    assert items[2]["linux"] == "/boot/memtest86+ia32.bin"
    inner, second = items[3]["entries"]
    assert inner["kind"] == "submenu" and inner["entries"][0]["release"] == "1.0-deep"
    assert (second["release"], second["args"]) == ("2.0-second", "quiet")


def test_parse_empty_and_garbage():
    assert grub_boot.parse_grub_cfg("") == []
    assert grub_boot.parse_grub_cfg("set default=0\n}\n}\n") == []


# --- which entry boots ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("default, path, title", [
    ("0", "0", "Ubuntu"),
    ("", "0", "Ubuntu"),
    (None, "0", "Ubuntu"),
    (0, "0", "Ubuntu"),
    ("1", "1>0", "Ubuntu, with Linux " + NEW),
    ("1>1", "1>1", "Ubuntu, with Linux %s (recovery mode)" % NEW),
    ("1>2", "1>2", "Ubuntu, with Linux " + OLD),
    ("2", "2", "UEFI Firmware Settings"),
    ("Ubuntu", "0", "Ubuntu"),
    ("gnulinux-simple-" + UUID, "0", "Ubuntu"),
    ("Advanced options for Ubuntu", "1>0", "Ubuntu, with Linux " + NEW),
    (advanced(OLD), "1>2", "Ubuntu, with Linux " + OLD),
    (advanced(OLD, "recovery"), "1>3", "Ubuntu, with Linux %s (recovery mode)" % OLD),
    ("Advanced options for Ubuntu>Ubuntu, with Linux " + OLD, "1>2", "Ubuntu, with Linux " + OLD),
    ("1>gnulinux-%s-advanced-%s" % (OLD, UUID), "1>2", "Ubuntu, with Linux " + OLD),
    ("gnulinux-advanced-%s>3" % UUID, "1>3", "Ubuntu, with Linux %s (recovery mode)" % OLD),
    ("uefi-firmware", "2", "UEFI Firmware Settings"),
    # grub_strtoul: hex, octal, leading blanks, digits before other text.
    ("0x2", "2", "UEFI Firmware Settings"),
    ("01", "1>0", "Ubuntu, with Linux " + NEW),
    (" \t2", "2", "UEFI Firmware Settings"),
    ("1 and more", "1>0", "Ubuntu, with Linux " + NEW),
    ("4294967297", "1>0", "Ubuntu, with Linux " + NEW),
])
def test_resolve_grub_default_forms(menu, default, path, title):
    result = grub_boot.resolve(menu, default, {})
    assert (result["path"], result["entry"]["title"]) == (path, title)
    assert (result["by"], result["source"], result["reason"]) == ("GRUB_DEFAULT", "GRUB_DEFAULT", None)


@pytest.mark.parametrize("default, path", [
    ("3", "0"),
    ("-1", "0"),
    ("99999999999999999999999", "0"),
    ("gnulinux-6.11.0-1016-nvidia-advanced-" + UUID, "0"),
    ("Ubuntu, with Linux " + OLD, "0"),
    ("Advanced options", "0"),
    (advanced("6.8.0-1-generic"), "1>0"),
    ("1>7", "1>0"),
    ("Advanced options for Ubuntu>nothing", "1>0"),
    ("nothing>1", "0"),
])
def test_resolve_falls_back_to_item_0_of_the_level(menu, default, path):
    result = grub_boot.resolve(menu, default, {})
    assert (result["by"], result["source"], result["path"]) == ("fallback", "GRUB_DEFAULT", path)
    assert repr(default) in result["reason"]
    assert result["entry"]["release"] == NEW


def test_resolve_saved(menu):
    saved = grub_boot.read_grubenv(fixture("grubenv-saved"))
    result = grub_boot.resolve(menu, "saved", saved)
    assert (result["by"], result["requested"], result["path"], result["entry"]["release"]) == (
        "saved_entry", advanced(OLD), "1>2", OLD)
    missing = grub_boot.resolve(menu, "saved", grub_boot.read_grubenv(fixture("grubenv-new")))
    assert (missing["by"], missing["source"], missing["path"]) == ("fallback", "saved_entry", "0")
    assert "saved_entry is empty" in missing["reason"]
    assert grub_boot.resolve(menu, "saved", {"saved_entry": "2"})["entry"]["id"] == "uefi-firmware"


@pytest.mark.parametrize("default", ["0", "saved", "1>2", "nothing"])
def test_next_entry_wins_over_every_default(menu, default):
    env = grub_boot.read_grubenv(fixture("grubenv-next"))
    result = grub_boot.resolve(menu, default, env)
    assert (result["by"], result["path"]) == ("next_entry", "1>1")
    assert result["entry"]["id"] == "gnulinux-%s-recovery-%s" % (NEW, UUID)


def test_next_entry_that_names_nothing_still_wins_then_falls_back(menu):
    result = grub_boot.resolve(menu, "1>2", {"next_entry": "gone", "saved_entry": advanced(OLD)})
    assert (result["by"], result["source"], result["path"]) == ("fallback", "next_entry", "0")


def test_initrdfail_replays_prev_entry(menu):
    env = {"initrdfail": "1", "prev_entry": advanced(OLD), "next_entry": "0"}
    assert grub_boot.resolve(menu, "0", env)["entry"]["release"] == OLD
    env = {"initrdfail": "1", "next_entry": "2"}
    assert grub_boot.resolve(menu, "0", env)["path"] == "0"
    env = {"initrdfail": "2", "next_entry": "2"}
    assert grub_boot.resolve(menu, "0", env)["path"] == "2"


def test_title_corrections_apply_to_old_titles(menu):
    old = "Ubuntu, with Linux " + OLD
    text = fixture("grub.cfg").replace(
        "### END /etc/grub.d/10_linux ###",
        "if [ \"x$default\" = '%s' ]; then default='Advanced options for Ubuntu>%s'; fi;\n"
        "### END /etc/grub.d/10_linux ###" % (old, old))
    corrections = grub_boot.parse_title_corrections(text)
    assert corrections == {old: "Advanced options for Ubuntu>" + old}
    assert grub_boot.parse_title_corrections(fixture("grub.cfg")) == {}
    result = grub_boot.resolve(grub_boot.parse_grub_cfg(text), old, {}, corrections)
    assert (result["by"], result["requested"], result["path"]) == ("GRUB_DEFAULT", old, "1>2")
    assert grub_boot.resolve(menu, old, {})["by"] == "fallback"


def test_escaped_greater_than_in_titles():
    items = grub_boot.parse_grub_cfg(QUOTING)
    assert grub_boot.resolve(items, "Nested >> menu>Second", {})["entry"]["title"] == "Second"
    assert grub_boot.resolve(items, "nested>0>0", {})["entry"]["title"] == "Deep"
    assert grub_boot.resolve(items, "nested", {})["path"] == "3>0>0"
    assert grub_boot.resolve(items, "Nested > menu>Second", {})["by"] == "fallback"
    assert grub_boot.resolve(items, "No id at all", {})["path"] == "2"


def test_resolve_empty_menu_and_empty_submenu():
    assert grub_boot.resolve([], "0", {}) is None
    items = grub_boot.parse_grub_cfg("submenu 'Empty' {\n}\nmenuentry 'After' {\n}\n")
    result = grub_boot.resolve(items, "0", {})
    assert (result["entry"], result["path"]) == (None, "0")
    assert grub_boot.resolve(items, "1", {})["entry"]["title"] == "After"


def test_older_installed_last_fixture_boots_the_saved_or_newest():
    text = fixture("grub-older-installed-last.cfg")
    items, default = grub_boot.parse_grub_cfg(text), grub_boot.parse_cfg_default(text)
    assert [e["release"] for e in items[1]["entries"]] == [NEW, NEW, "6.17.0-1008-nvidia", "6.17.0-1008-nvidia"]
    assert grub_boot.resolve(items, default, {"saved_entry": advanced("6.17.0-1008-nvidia")})["path"] == "1>2"
    # grubenv-saved names the 6.11 kernel, which this host no longer has: the submenu's first entry boots.
    result = grub_boot.resolve(items, default, grub_boot.read_grubenv(fixture("grubenv-saved")))
    assert (result["by"], result["path"], result["entry"]["release"]) == ("fallback", "1>0", NEW)


# --- the menu the next update-grub writes -----------------------------------------------------------------------

KEYS = ("kind", "title", "id", "linux", "release", "args", "initrd")


def shape(items):
    out = []
    for item in items:
        row = tuple(item.get(key) for key in KEYS if key in item or item["kind"] == "entry")
        out.append(row + ((shape(item["entries"]),) if item["kind"] == "submenu" else ()))
    return out


def test_build_menu_writes_the_fixture_menu(menu, defaults):
    built = grub_boot.build_menu([OLD, NEW], defaults, dev_id=grub_boot.device_id(menu))
    assert shape(built) == shape(menu)
    assert [e["type"] for e in built[1]["entries"]] == ["advanced", "recovery"] * 2
    assert built[0]["type"] == "simple"


def test_build_menu_uses_a_placeholder_id_and_the_distributor(defaults):
    built = grub_boot.build_menu([NEW], defaults)
    assert built[0]["id"] == "gnulinux-simple-" + grub_boot.DEVICE_ID_PLACEHOLDER
    assert built[0]["args"].startswith("root=UUID=%s ro " % grub_boot.DEVICE_ID_PLACEHOLDER)
    assert built[1]["entries"][0]["id"] == "gnulinux-%s-advanced-%s" % (NEW, grub_boot.DEVICE_ID_PLACEHOLDER)
    assert grub_boot.build_menu([NEW], defaults, os_name="DGX OS")[0]["title"] == "DGX OS GNU/Linux"
    assert grub_boot.build_menu([NEW], {"GRUB_DISTRIBUTOR": "Kubuntu"})[1]["title"] == "Advanced options for Kubuntu"
    assert grub_boot.build_menu([NEW], {})[0]["title"] == "GNU/Linux"
    assert grub_boot.build_menu([], defaults) == [grub_boot.build_menu([NEW], defaults)[-1]]
    assert grub_boot.build_menu([NEW], defaults, uefi_firmware=False)[-1]["kind"] == "submenu"


DEFAULTS_AND_ENVS = [
    ("0", "grubenv-new"),
    ("1", "grubenv-new"),
    ("1>2", "grubenv-new"),
    ("1>3", "grubenv-new"),
    ("2", "grubenv-new"),
    ("7", "grubenv-new"),
    ("saved", "grubenv-new"),
    ("saved", "grubenv-saved"),
    ("0", "grubenv-next"),
    (advanced(OLD), "grubenv-new"),
    ("Advanced options for Ubuntu>Ubuntu, with Linux " + OLD, "grubenv-new"),
    ("gone", "grubenv-new"),
]


@pytest.mark.parametrize("default, env_name", DEFAULTS_AND_ENVS)
def test_predict_on_the_fixture_kernels_agrees_with_resolve_on_the_fixture(menu, defaults, default, env_name):
    env = grub_boot.read_grubenv(fixture(env_name))
    releases = [e["release"] for e in menu[1]["entries"]]
    predicted = grub_boot.predict(releases, dict(defaults, GRUB_DEFAULT=default), env, dev_id=UUID)
    actual = grub_boot.resolve(menu, default, env)
    for key in ("by", "path", "source", "requested"):
        assert predicted[key] == actual[key], key
    for key in KEYS:
        assert predicted["entry"][key] == actual["entry"][key], key


def test_predict_without_device_id_still_picks_the_same_kernel(menu, defaults):
    env = grub_boot.read_grubenv(fixture("grubenv-new"))
    for default in ("0", "1>2", "Advanced options for Ubuntu>Ubuntu, with Linux " + OLD):
        predicted = grub_boot.predict([NEW, OLD], dict(defaults, GRUB_DEFAULT=default), env)
        assert predicted["entry"]["release"] == grub_boot.resolve(menu, default, env)["entry"]["release"]


def test_predict_a_newer_kernel_becomes_entry_0(defaults):
    result = grub_boot.predict([OLD, NEW, "7.0.0-1019-nvidia"], defaults)
    entry = result["entry"]
    assert (result["path"], entry["release"], entry["title"]) == ("0", "7.0.0-1019-nvidia", "Ubuntu")
    assert [e["release"] for e in result["menu"][1]["entries"][::2]] == ["7.0.0-1019-nvidia", NEW, OLD]


def test_predict_a_pinned_kernel_stays_pinned_and_falls_back_when_gone(defaults):
    pinned = dict(defaults, GRUB_DEFAULT=advanced(OLD).replace(UUID, grub_boot.DEVICE_ID_PLACEHOLDER))
    kept = grub_boot.predict([OLD, NEW, "7.0.0-1019-nvidia"], pinned)
    assert (kept["by"], kept["path"], kept["entry"]["release"]) == ("GRUB_DEFAULT", "1>4", OLD)
    gone = grub_boot.predict([NEW, "7.0.0-1019-nvidia"], pinned)
    assert (gone["by"], gone["path"], gone["entry"]["release"]) == ("fallback", "1>0", "7.0.0-1019-nvidia")
    saved = grub_boot.predict([NEW, "7.0.0-1019-nvidia"], dict(defaults, GRUB_DEFAULT="saved"),
                              grub_boot.read_grubenv(fixture("grubenv-saved")), dev_id=UUID)
    assert (saved["by"], saved["entry"]["release"]) == ("fallback", "7.0.0-1019-nvidia")


def test_predict_disable_submenu_and_recovery(defaults):
    flat = dict(defaults, GRUB_DISABLE_SUBMENU="y")
    result = grub_boot.predict([OLD, NEW], flat)
    assert [item["title"] for item in result["menu"]] == [
        "Ubuntu, with Linux " + NEW, "Ubuntu, with Linux %s (recovery mode)" % NEW,
        "Ubuntu, with Linux " + OLD, "Ubuntu, with Linux %s (recovery mode)" % OLD, "UEFI Firmware Settings"]
    assert result["menu"][0]["id"] == "gnulinux-%s-advanced-%s" % (NEW, grub_boot.DEVICE_ID_PLACEHOLDER)
    assert grub_boot.predict([OLD, NEW], dict(flat, GRUB_DEFAULT="2"))["entry"]["release"] == OLD
    assert grub_boot.predict([OLD, NEW], dict(defaults, GRUB_DISABLE_SUBMENU="true"))["menu"][0]["type"] == "advanced"
    assert grub_boot.predict([OLD, NEW], dict(defaults, GRUB_DISABLE_SUBMENU="n"))["menu"][0]["type"] == "simple"
    bare = grub_boot.predict([OLD, NEW], dict(flat, GRUB_DISABLE_RECOVERY="true", GRUB_DEFAULT="1"))
    assert [item.get("type") for item in bare["menu"]] == ["advanced", "advanced", None]
    assert bare["entry"]["release"] == OLD
    nested = grub_boot.predict([OLD, NEW], dict(defaults, GRUB_DISABLE_RECOVERY="true", GRUB_DEFAULT="1>1"))
    assert [e["release"] for e in nested["menu"][1]["entries"]] == [NEW, OLD] and nested["entry"]["release"] == OLD


def test_predict_old_title_default_is_corrected_only_where_the_submenu_exists(defaults):
    old_title = dict(defaults, GRUB_DEFAULT="Ubuntu, with Linux " + OLD)
    corrected = grub_boot.predict([OLD, NEW], old_title)
    assert (corrected["by"], corrected["path"], corrected["entry"]["release"]) == ("GRUB_DEFAULT", "1>2", OLD)
    # 10_linux writes the correction to the submenu path even without a submenu: GRUB then boots item 0.
    flat = grub_boot.predict([OLD, NEW], dict(old_title, GRUB_DISABLE_SUBMENU="y"))
    assert (flat["by"], flat["path"], flat["entry"]["release"]) == ("fallback", "0", NEW)
    previous = grub_boot.predict([OLD, NEW], dict(defaults, GRUB_DEFAULT="Previous Linux versions>Ubuntu, with "
                                                  "Linux " + OLD))
    assert previous["entry"]["release"] == OLD


def test_predict_flavour_order_and_top_level(defaults):
    releases = ["6.8.0-101-generic", "6.8.0-90-lowlatency"]
    assert grub_boot.predict(releases, defaults)["entry"]["release"] == "6.8.0-101-generic"
    ranked = grub_boot.predict(releases, dict(defaults, GRUB_FLAVOUR_ORDER="lowlatency"))
    assert ranked["entry"]["release"] == "6.8.0-90-lowlatency"
    top = grub_boot.predict([OLD, NEW], dict(defaults, GRUB_TOP_LEVEL="/boot/vmlinuz-" + OLD))
    assert top["entry"]["release"] == OLD


def test_predict_nothing_installed(defaults):
    result = grub_boot.predict([], defaults)
    assert (result["entry"]["id"], result["menu"]) == ("uefi-firmware", result["menu"][:1])
    assert grub_boot.predict([], defaults, uefi_firmware=False) is None


# --- kernel command line --------------------------------------------------------------------------------------

def test_cmdline_of_parsed_and_predicted_entries_agree(menu, defaults):
    root = [w for w in grub_boot.cmdline(menu[0]) if w.startswith("root=")][0][len("root="):]
    built = grub_boot.build_menu([NEW, OLD], defaults, dev_id=UUID, root=root)
    pairs = [(menu[0], built[0])] + list(zip(menu[1]["entries"], built[1]["entries"]))
    for parsed, predicted in pairs:
        assert grub_boot.cmdline(parsed) == grub_boot.cmdline(predicted, defaults) == grub_boot.cmdline(predicted)
    assert grub_boot.cmdline(menu[0]) == ["root=UUID=" + UUID, "ro", "quiet", "splash", "kho=off", "$vt_handoff"]
    assert grub_boot.cmdline(menu[1]["entries"][1]) == ["root=UUID=" + UUID, "ro", "recovery", "nomodeset"]
    assert grub_boot.cmdline(menu[2]) is None and grub_boot.cmdline(None) is None


def test_cmdline_recomputed_from_other_defaults(defaults):
    entry = grub_boot.build_menu([NEW], defaults)[1]["entries"][0]
    recovery = grub_boot.build_menu([NEW], defaults)[1]["entries"][1]
    changed = dict(defaults, GRUB_CMDLINE_LINUX="audit=1", GRUB_CMDLINE_LINUX_DEFAULT="quiet")
    root = "root=UUID=" + grub_boot.DEVICE_ID_PLACEHOLDER
    assert grub_boot.cmdline(entry, changed) == [root, "ro", "audit=1", "quiet"]
    assert grub_boot.cmdline(recovery, changed) == [root, "ro", "recovery", "nomodeset", "audit=1"]
    assert grub_boot.cmdline(recovery, changed, machine="x86_64") == [
        root, "ro", "recovery", "nomodeset", "dis_ucode_ldr", "audit=1"]
    assert grub_boot.cmdline(recovery, dict(changed, GRUB_CMDLINE_LINUX_RECOVERY="single")) == [
        root, "ro", "single", "nomodeset", "audit=1"]
    assert grub_boot.cmdline(entry, dict(changed, GRUB_CMDLINE_LINUX_DEFAULT="splash")) == [
        root, "ro", "audit=1", "splash", "$vt_handoff"]
    assert grub_boot.cmdline(entry, dict(changed, GRUB_CMDLINE_LINUX_DEFAULT="splash"), machine="ppc64le") == [
        root, "ro", "audit=1", "splash"]


def test_cmdline_as_proc_cmdline_shows_it(menu):
    words = grub_boot.cmdline(menu[0], variables={"vt_handoff": "vt.handoff=7"}, boot_image=True)
    assert " ".join(words) == ("BOOT_IMAGE=/boot/vmlinuz-%s root=UUID=%s ro quiet splash kho=off vt.handoff=7"
                               % (NEW, UUID))
    assert grub_boot.cmdline(menu[0], variables={})[-1] == "kho=off"


def test_entry_spec_names_the_normal_entry_of_a_release_not_its_recovery():
    menu = grub_boot.parse_grub_cfg(fixture("grub.cfg"))
    dev = "3f0c6b9e-8d2a-4c71-9b5e-2a7d41c0e8f5"
    # the newest kernel: the top-level "Ubuntu" entry, first in GRUB's order
    assert grub_boot.entry_spec(menu, "6.17.0-1014-nvidia") == "gnulinux-simple-" + dev
    # an older one: its advanced entry inside the submenu
    older = grub_boot.entry_spec(menu, "6.11.0-1016-nvidia")
    assert older == "gnulinux-advanced-%s>gnulinux-6.11.0-1016-nvidia-advanced-%s" % (dev, dev)
    chosen = grub_boot.resolve(menu, "0", {"next_entry": older})
    assert chosen["by"] == "next_entry" and chosen["entry"]["release"] == "6.11.0-1016-nvidia"
    assert "recovery" not in chosen["entry"]["args"].split()
    assert grub_boot.entry_spec(menu, "7.0.0-1019-nvidia") is None
