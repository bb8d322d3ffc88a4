#!/usr/bin/env bash
# The store's contract tests run on a throwaway PostgreSQL cluster (packages/store/test/support/
# pg-cluster.ts) started from the server binaries, never on a running server. Install Debian's
# postgresql when no binaries are found (DSHM_PG_BIN, /usr/lib/postgresql/<version>/bin, PATH);
# CI runs as root, a workstation may have sudo.
set -euo pipefail
found() {
  if [ -n "${DSHM_PG_BIN:-}" ]; then [ -x "$DSHM_PG_BIN/initdb" ] && [ -x "$DSHM_PG_BIN/pg_ctl" ]; return; fi
  for dir in /usr/lib/postgresql/*/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then return 0; fi
  done
  command -v initdb >/dev/null && command -v pg_ctl >/dev/null
}
if found; then exit 0; fi
if [ -n "${DSHM_PG_BIN:-}" ]; then
  echo "[setup] error: DSHM_PG_BIN=$DSHM_PG_BIN has no initdb and pg_ctl" >&2
  exit 1
fi
echo "[setup] installing Debian's postgresql for the store's contract tests (apt-get)"
if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
  echo "[setup] error: PostgreSQL's server binaries are missing and apt-get needs root. Run: sudo apt-get install -y postgresql (or set DSHM_PG_BIN)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# The package's own cluster and service are not used (the tests start their own); in a
# container without an init system starting it may fail harmlessly.
$sudo apt-get install -y -qq --no-install-recommends postgresql >/dev/null
found || { echo "[setup] error: postgresql installed but initdb/pg_ctl are not under /usr/lib/postgresql/<version>/bin" >&2; exit 1; }
if [ "$(id -u)" = 0 ] && ! id -u postgres >/dev/null 2>&1; then
  echo "[setup] error: running as root needs the 'postgres' user (initdb refuses root); the postgresql package should have created it" >&2
  exit 1
fi
