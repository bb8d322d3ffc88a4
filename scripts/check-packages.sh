#!/usr/bin/env bash
# Publish readiness, run by CI on the fresh clone right after `npm run setup`:
# - the bins npm linked at install time start (`npx --no-install` never asks the registry);
# - every publishable package passes publint (manifest, exports, files) and
#   @arethetypeswrong/cli (its types resolve the way Node's ESM resolution loads the code).
# The packed file lists themselves are checked by apps/playground/test/packed-contents.test.ts.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node22-env.sh

echo "[publish] npx --no-install dsh-memory --help, npx --no-install dsh-memory-tree-mcp --help"
npx --no-install dsh-memory --help > /dev/null
npx --no-install dsh-memory-tree-mcp --help > /dev/null

for dir in packages/* apps/cli; do
  [ -f "$dir/package.json" ] || continue
  if [ "$(node -p "require('./$dir/package.json').private === true")" = true ]; then continue; fi
  echo "[publish] publint + attw: $dir"
  node scripts/publint.mjs "$dir"
  # ESM only by design (type: module, import conditions): CommonJS resolution is not a target.
  # A package without a JavaScript entry (the preset is a bundle patch only) has nothing to type;
  # the bundle patch export is YAML for the DSH loader, not a module; a browser half (`./client`,
  # see scripts/publint.mjs) is a script the host's module loader evaluates, not a typed import.
  if [ "$(node -p "Object.values(require('./$dir/package.json').exports ?? {}).some((entry) => typeof entry === 'object')")" = true ]; then
    exclude=(./cordis.patch.yml)
    if [ "$(node -p "require('./$dir/package.json').dsh?.client !== undefined")" = true ]; then exclude+=(./client); fi
    npx --no-install attw --pack "$dir" --profile esm-only --format ascii --exclude-entrypoints "${exclude[@]}"
  fi
done
echo "[publish] ok"
