#!/bin/sh
# Installs Debian's headless-capable Chromium and its WebDriver, chromedriver (package
# chromium-driver), for tests/report_browser.rs (the report page is opened in Chromium) and
# tests/serve_browser.rs (the dashboard is driven over WebDriver while a run writes). Called by
# `make test` only when either is missing. Needs root (or sudo) and the Debian package
# mirrors; exits non-zero if the install fails.
set -eu
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    echo "chromium already installed: $(command -v chromium), $(command -v chromedriver)"
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium chromium-driver fonts-dejavu-core
command -v chromium
command -v chromedriver
