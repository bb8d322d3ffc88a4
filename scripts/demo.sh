#!/usr/bin/env bash
# The main job: set up (idempotent), then run the demo story in the real DSH host.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node22-env.sh
bash scripts/setup.sh >&2
exec node apps/playground/dist/demo.js "$@"
