#!/usr/bin/env bash
# Installs Debian's chromium, the headless browser `make docs-site-test` opens
# the rendered docs site in (tests/docs_site/). Safe to run twice: nothing is
# installed when the browser is there.
set -euo pipefail

if ! command -v chromium >/dev/null 2>&1; then
  echo "chromium-setup: installing chromium (Debian package, for make docs-site-test)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
