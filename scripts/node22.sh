#!/usr/bin/env bash
# Run one command with Node >= 22.16 first on PATH (see node22-env.sh).
set -euo pipefail
source "$(dirname "$0")/node22-env.sh"
exec "$@"
