#!/usr/bin/env bash
# The memory browser's tests drive Debian's Chromium through playwright-core (a test tool's
# own browser download cannot work offline). Install it from apt when it is missing; CI runs
# as root, a workstation may have sudo. DSHM_CHROMIUM points at another binary.
set -euo pipefail
bin="${DSHM_CHROMIUM:-/usr/bin/chromium}"
# Screenshots of Chinese/Japanese pages need a CJK font; without one they render as boxes.
# grep reads all of fc-list's output (no -q): with pipefail, a grep that quits at the first match
# can leave fc-list dying of SIGPIPE, and the pipeline then fails although the font is there.
if [ -x "$bin" ] && { [ -n "${DSHM_CHROMIUM:-}" ] || fc-list 2>/dev/null | grep -i "noto.*cjk" > /dev/null; }; then
  exit 0
fi
echo "[setup] installing Debian's chromium and a CJK font for the browser tests (apt-get)"
if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
  if [ -x "$bin" ]; then
    echo "[setup] warning: no CJK font (apt-get install fonts-noto-cjk); Chinese screenshots will show boxes" >&2
    exit 0
  fi
  echo "[setup] error: $bin is missing and apt-get needs root. Run: sudo apt-get install -y chromium fonts-noto-cjk (or set DSHM_CHROMIUM)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-noto-cjk >/dev/null
test -x "$bin" || { echo "[setup] error: chromium installed but $bin is not there" >&2; exit 1; }
