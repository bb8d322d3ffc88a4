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

# One package: publint, then attw on what npm would pack.
check() {
  local dir=$1
  echo "[publish] publint + attw: $dir"
  node scripts/publint.mjs "$dir"
  # ESM only by design (type: module, import conditions): CommonJS resolution is not a target.
  # A package without a JavaScript entry (the preset is a bundle patch only) has nothing to type;
  # the bundle patch export is YAML for the DSH loader, not a module; a browser half (`./client`,
  # see scripts/publint.mjs) is a script the host's module loader evaluates, not a typed import.
  if [ "$(node -p "Object.values(require('./$dir/package.json').exports ?? {}).some((entry) => typeof entry === 'object')")" = true ]; then
    local exclude=(./cordis.patch.yml)
    if [ "$(node -p "require('./$dir/package.json').dsh?.client !== undefined")" = true ]; then exclude+=(./client); fi
    npx --no-install attw --pack "$dir" --profile esm-only --format ascii --exclude-entrypoints "${exclude[@]}"
  fi
}

# The packages are independent and each check is mostly process start-up and npm pack: run two
# at a time, then print each package's output in order and fail if any failed.
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
dirs=()
for dir in packages/* apps/cli; do
  [ -f "$dir/package.json" ] || continue
  if [ "$(node -p "require('./$dir/package.json').private === true")" = true ]; then continue; fi
  dirs+=("$dir")
done
pids=()
for i in "${!dirs[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done
  (check "${dirs[$i]}" > "$logs/$i.log" 2>&1; echo $? > "$logs/$i.status") &
  pids+=($!)
done
wait "${pids[@]}" || true
failed=()
for i in "${!dirs[@]}"; do
  cat "$logs/$i.log"
  [ "$(cat "$logs/$i.status" 2>/dev/null || echo 1)" = 0 ] || failed+=("${dirs[$i]}")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "[publish] failed: ${failed[*]}" >&2
  exit 1
fi
echo "[publish] ok"
