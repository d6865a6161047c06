#!/bin/sh
# Installs Debian's headless-capable Chromium for tests/report_browser.rs (the report page is
# opened in it). Called by `make test` only when no chromium is on PATH. Needs root (or sudo)
# and the Debian package mirrors; exits non-zero if the install fails.
set -eu
if command -v chromium >/dev/null 2>&1; then
    echo "chromium already installed: $(command -v chromium)"
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core
command -v chromium
