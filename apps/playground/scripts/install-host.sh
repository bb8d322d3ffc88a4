#!/usr/bin/env bash
# Install the pinned DSH host into apps/playground/host from its lockfile.
# `npm install --legacy-peer-deps` is required (a plain install spins in peer resolution);
# the 17 peers it would skip and the exact cordis family are listed in host/package.json.
set -euo pipefail
cd "$(dirname "$0")/../host"
if [ -f node_modules/.package-lock.json ] && [ -f node_modules/@deepseek-ai/dsh/lib/bin.js ] \
   && cmp -s package-lock.json .installed-lock 2>/dev/null; then
  echo "[playground] DSH host already installed"
  exit 0
fi
echo "[playground] installing the pinned DSH host (about 30-90 s)"
npm install --legacy-peer-deps --no-audit --no-fund --loglevel=error
cp package-lock.json .installed-lock
