#!/bin/sh
# Installs Debian's GNU Go (package gnugo), the GTP engine tests/gtp_gnugo.rs plays whole
# games against through `tabula match ... --b gtp:"gnugo --mode gtp ..."` (docs/gtp.md).
# Called by `make test` only when it is missing. Needs root (or sudo) and the Debian package
# mirrors; exits non-zero if the install fails.
set -eu
# Debian installs it as /usr/games/gnugo, which is not on every PATH.
if command -v gnugo >/dev/null 2>&1 || [ -x /usr/games/gnugo ]; then
    echo "gnugo already installed: $(command -v gnugo || echo /usr/games/gnugo)"
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends gnugo
command -v gnugo || test -x /usr/games/gnugo
