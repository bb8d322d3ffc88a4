#!/usr/bin/env bash
# The test command: set up (idempotent), build, then every vitest project — unit, plugin and
# end-to-end tests against the real DSH host (the store's contract tests also start a
# throwaway PostgreSQL, installed by ensure-postgres.sh when missing). Extra arguments go to vitest
# (`npm test -- capture`, `npm test -- -t "broken config"`, `npm test -- --project store`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node22-env.sh
# CI (.ci/run) has just run the setup on its own; everyone else gets it here (idempotent).
[ "${DSHM_SETUP_DONE:-}" = 1 ] || bash scripts/setup.sh
bash scripts/ensure-chromium.sh
bash scripts/ensure-postgres.sh
exec npx vitest run "$@"
