# shellcheck shell=bash
# Source this file (". scripts/node24.sh") to put Node.js 24 LTS on PATH.
#
# The project runs on Node >= 22.19 (client-node 2.x needs it). When the machine's node is older,
# the official binary is taken from the npm registry's `node` package (node@24 carries the
# binary and its C headers), cached under ~/.cache/shapes-demo/node-<version>, and
# npm_config_nodedir points at its headers so native modules (better-sqlite3) compile offline.
NODE24_VERSION="${NODE24_VERSION:-24.21.0}"

_node24_ok() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=19)?0:1)'
}

if _node24_ok && [ -z "${NODE24_FORCE:-}" ]; then
  : # the machine's node is recent enough
else
  _node24_dir="${XDG_CACHE_HOME:-$HOME/.cache}/shapes-demo/node-$NODE24_VERSION"
  case "$(uname -m)" in aarch64 | arm64) _node24_arch=arm64 ;; *) _node24_arch=x64 ;; esac
  _node24_pkg="$_node24_dir/node_modules/node/node_modules/node-$(uname -s | tr '[:upper:]' '[:lower:]')-$_node24_arch"
  if [ ! -x "$_node24_pkg/bin/node" ]; then
    if ! command -v npm >/dev/null 2>&1; then
      echo "node24.sh: cannot install Node $NODE24_VERSION: npm is not on PATH (install Node.js >= 22.19 yourself)" >&2
      return 1 2>/dev/null || exit 1
    fi
    echo "node24.sh: installing Node $NODE24_VERSION from the npm registry into $_node24_dir ..." >&2
    _node24_tmp="$_node24_dir.tmp.$$"
    mkdir -p "$_node24_tmp" &&
      printf '{"name":"node24-cache","private":true,"allowScripts":{"node":true}}\n' >"$_node24_tmp/package.json" &&
      (cd "$_node24_tmp" && npm install --no-save --no-audit --no-fund --loglevel=error "node@$NODE24_VERSION" >&2) &&
      [ -x "$_node24_tmp${_node24_pkg#"$_node24_dir"}/bin/node" ] &&
      rm -rf "$_node24_dir" && mv "$_node24_tmp" "$_node24_dir" || {
        rm -rf "$_node24_tmp"
        echo "node24.sh: cannot install Node $NODE24_VERSION from the npm registry (see npm's message above)" >&2
        return 1 2>/dev/null || exit 1
      }
  fi
  export PATH="$_node24_pkg/bin:$PATH"
  export npm_config_nodedir="$_node24_pkg"
  unset _node24_dir _node24_pkg _node24_tmp _node24_arch
fi
unset -f _node24_ok
