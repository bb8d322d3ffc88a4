# Source this file: it puts a Node >= 22.16 first on PATH (installing the npm `node@22`
# package into .tools/ on first use) and points native builds at that Node's headers.
# DSH and better-sqlite3 built for DSH need Node 22; machines here ship Node 20.
_dshm_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_dshm_node_ok() {
  node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=16)?0:1)' 2>/dev/null
}
if ! _dshm_node_ok; then
  _dshm_tools="$_dshm_root/.tools/node22"
  _dshm_bin="$(ls -d "$_dshm_tools"/node_modules/node/node_modules/node-*/bin 2>/dev/null | head -n 1 || true)"
  if [ -z "$_dshm_bin" ] || [ ! -x "$_dshm_bin/node" ]; then
    echo "[node22] installing the npm package node@22 into .tools/node22" >&2
    mkdir -p "$_dshm_tools"
    npm install --prefix "$_dshm_tools" --no-audit --no-fund --loglevel=error node@22 >&2
    _dshm_bin="$(ls -d "$_dshm_tools"/node_modules/node/node_modules/node-*/bin 2>/dev/null | head -n 1 || true)"
    if [ -z "$_dshm_bin" ]; then
      # npm >= 11 may skip the package's preinstall; run it by hand.
      (cd "$_dshm_tools/node_modules/node" && node installArchSpecificPackage >&2)
      _dshm_bin="$(ls -d "$_dshm_tools"/node_modules/node/node_modules/node-*/bin 2>/dev/null | head -n 1 || true)"
    fi
  fi
  if [ -z "$_dshm_bin" ] || [ ! -x "$_dshm_bin/node" ]; then
    echo "[node22] could not install Node 22 into $_dshm_tools" >&2
    return 1 2>/dev/null || exit 1
  fi
  export PATH="$_dshm_bin:$PATH"
  export npm_config_nodedir="$(dirname "$_dshm_bin")"
fi
export TURBO_TELEMETRY_DISABLED=1
export DO_NOT_TRACK=1
unset _dshm_root _dshm_tools _dshm_bin
