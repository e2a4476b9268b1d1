#!/usr/bin/env bash
# `make docs-site`: the collection's documentation as HTML, rendered by
# antsibull-docs and Sphinx the way Ansible's own docs site renders collections:
# every module, filter, lookup and callback from its DOCUMENTATION / RETURN /
# EXAMPLES and every role from meta/argument_specs.yml.
#
#   build/docs-site/html/index.html                              the site
#   build/docs-site/html/collections/sparkfleet/gb10/index.html  the collection
#   build/docs-site/antsibull.log, sphinx.log                    what each said
#
# The collection is the checkout itself (collections/ansible_collections/
# sparkfleet/gb10 is a symlink to the top), found through
# ANSIBLE_COLLECTIONS_PATH; nothing is fetched. Intersphinx is off (no network):
# references into Ansible's own docs render as plain text.
#
# A plugin whose documentation antsibull-docs cannot read gets an error page
# and the render goes on, so the site shows what is broken; the antsibull-docs
# errors are printed at the end. `make docs-site-test` fails on such a page.
# The Sphinx project is made afresh each run (sphinx-init): safe to run twice.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/build/docs-site"
src="$out/src"
export ANSIBLE_COLLECTIONS_PATH="$top/collections"
export ANSIBLE_CONFIG="$top/ansible.cfg"

rm -rf "$src" "$out/html"
mkdir -p "$src"
cat >"$out/index.rst" <<'RST'
.. _docsite_root_index:

sparkfleet.gb10
===============

Reference of the Ansible collection ``sparkfleet.gb10``: every role's argument spec and every module, filter,
lookup and callback, rendered from the collection's own documentation (``make docs-site``). What the collection
does and how to run it: the repository's ``README.md``.

.. toctree::
   :maxdepth: 2
   :caption: Collections:

   collections/index

.. toctree::
   :maxdepth: 1
   :caption: Plugin indexes:
   :glob:

   collections/index_*

.. toctree::
   :maxdepth: 1
   :caption: Reference indexes:

   collections/environment_variables
RST
antsibull-docs sphinx-init --use-current --dest-dir "$src" --index-rst-source "$out/index.rst" \
  --project sparkfleet.gb10 --title sparkfleet.gb10 --copyright "sparkfleet.gb10 developers" \
  sparkfleet.gb10 >/dev/null
# Offline: no inventories of python, jinja2 or Ansible's docs to fetch.
printf '\n# make docs-site: offline, no intersphinx inventories\nintersphinx_mapping = {}\n' >>"$src/conf.py"

mkdir -p "$src/rst"
chmod og-w "$src/rst"  # antsibull-docs wants the directory writable by itself only
echo "docs-site: antsibull-docs collection sparkfleet.gb10"
antsibull-docs --config-file "$src/antsibull-docs.cfg" collection \
  --cleanup everything --use-current --dest-dir "$src/rst" sparkfleet.gb10 >"$out/antsibull.log" 2>&1 \
  || { tail -30 "$out/antsibull.log" >&2; exit 1; }
echo "docs-site: sphinx-build"
sphinx-build -q -b html -c "$src" "$src/rst" "$out/html" >"$out/sphinx.log" 2>&1 \
  || { tail -30 "$out/sphinx.log" >&2; exit 1; }

errors=$(grep -c 'An error page will be generated\|did not return correct' "$out/antsibull.log" || true)
if [ "$errors" -gt 0 ]; then
  echo "docs-site: antsibull-docs could not read $errors plugin or role documentation(s) (error pages):" >&2
  grep -o 'plugin_name=[^:]*:plugin_type=[a-z]*' "$out/antsibull.log" | sed 's/^/  /' >&2
fi
echo "docs-site: $out/html/index.html ($(grep -c 'WARNING' "$out/sphinx.log" || true) Sphinx warnings in $out/sphinx.log)"
