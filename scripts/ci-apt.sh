#!/usr/bin/env bash
# CI (and anyone running the e2e suite): make sure a Chromium exists for the console's browser tests
# (e2e/console.test.ts drives it with playwright-core; a browser download is impossible on a closed network,
# so it comes from Debian's archive). Idempotent and quiet: when a browser is already there it only says so.
#
#   bash scripts/ci-apt.sh        # as root, or as a user with password-less sudo
#
# The tests use $CHROMIUM_PATH when set, else /usr/bin/chromium.
set -euo pipefail

browser="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$browser" ]; then
  echo "ci-apt: chromium present ($browser)"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ci-apt: cannot install chromium: no apt-get on this machine; install Chromium and set CHROMIUM_PATH" >&2
  exit 1
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
  else
    echo "ci-apt: cannot install chromium: not root and no password-less sudo; run: sudo apt-get install -y chromium" >&2
    exit 1
  fi
fi

echo "ci-apt: installing chromium (apt-get)"
export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! { "${as_root[@]}" apt-get update -qq && "${as_root[@]}" apt-get install -y -qq chromium; } >"$log" 2>&1; then
  echo "ci-apt: cannot install chromium; apt-get said:" >&2
  tail -n 20 "$log" >&2
  exit 1
fi
if [ ! -x /usr/bin/chromium ]; then
  echo "ci-apt: cannot find /usr/bin/chromium after installing the chromium package" >&2
  exit 1
fi
echo "ci-apt: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) installed"
