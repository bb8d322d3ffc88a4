#!/usr/bin/env bash
# Bring a checkout to a runnable state on a machine that may only have Node 20 and the npm
# registry: Node 22 (npm package node@22, with headers for native builds), the workspace
# install (better-sqlite3 compiled for Node 22), the build, and the pinned DSH host used by
# the demo and the end-to-end tests. Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node22-env.sh
echo "[setup] using node $(node --version) ($(command -v node))"

# The pinned host is its own npm project (apps/playground/host, outside the workspaces) and
# nothing in the workspace install or the build reads it: install it alongside them (mostly
# download time on a fresh machine), and report it after the build.
host_log="$(mktemp)"
bash apps/playground/scripts/install-host.sh > "$host_log" 2>&1 &
host_pid=$!
# On any exit (a failed npm ci too) let the host install finish rather than leave it running.
trap 'wait "$host_pid" 2>/dev/null || true; rm -f "$host_log"' EXIT

stamp=node_modules/.dshm-setup-lock
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp" \
   && node -e "require('better-sqlite3')(':memory:').close()" 2>/dev/null; then
  echo "[setup] workspace dependencies up to date"
else
  echo "[setup] installing workspace dependencies (native builds take about a minute)"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi

echo "[setup] building packages"
npx turbo run build --output-logs=errors-only

host_status=0
wait "$host_pid" || host_status=$?
cat "$host_log"
if [ "$host_status" != 0 ]; then
  echo "[setup] error: installing the pinned DSH host failed (exit $host_status); its output is above" >&2
  exit "$host_status"
fi
echo "[setup] done"
