#!/usr/bin/env bash
# Publish the public packages at the versions `npx changeset version` gave them (RELEASING.md).
#   bash scripts/release.sh --dry-run   checks, then `npm publish --dry-run` of each package
#   bash scripts/release.sh             checks, then `npx changeset publish` (needs npm credentials)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node22-env.sh
bash scripts/setup.sh
bash scripts/check-packages.sh
if [ "${1:-}" = "--dry-run" ]; then
  # --workspaces skips the private apps (playground, reliability).
  npm publish --dry-run --workspaces --access public
else
  npx changeset publish
fi
