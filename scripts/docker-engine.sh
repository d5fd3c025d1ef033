#!/usr/bin/env bash
# The Docker engine and the Compose v2 CLI (`docker compose`) for the compose demo and its e2e test
# (e2e/compose-demo.test.ts). `npm start` needs none of it.
#
#   bash scripts/docker-engine.sh           make both ready: install and start what is missing
#   bash scripts/docker-engine.sh --check   only say whether they are ready, or can be made ready here
#
# 1. The engine: when `docker info` fails, and this is a Debian machine where we are root (or have
#    password-less sudo), Debian's docker.io is installed (with debootstrap, which `npm run images` uses)
#    and dockerd is started in the background, its log in ${TMPDIR:-/tmp}/shapes-dockerd.log.
# 2. The CLI plugin: when `docker compose version` fails, Compose v2 is built from Go modules
#    (scripts/compose-cli; Debian's docker-compose is Compose v1, which rejects docker-compose.yml's
#    `name:`), once, into ${XDG_CACHE_HOME:-~/.cache}/shapes-demo/docker-compose-<version>/, and linked into
#    ${DOCKER_CONFIG:-~/.docker}/cli-plugins/. 3 to 6 minutes on 2 busy cores, the first time.
#
# Exit codes: 0 ready; 3 cannot be had on this machine (one line on stderr says why); 1 a step failed.
# Concurrent runs take turns (a lock in the cache folder): a second run waits, then finds all ready.
set -euo pipefail
cd "$(dirname "$0")/.."

COMPOSE_VERSION=v2.40.3 # also in scripts/compose-cli/go.mod
cache="${XDG_CACHE_HOME:-$HOME/.cache}/shapes-demo"
plugin_cache="$cache/docker-compose-$COMPOSE_VERSION/docker-compose"
plugin_dir="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"
dockerd_log="${TMPDIR:-/tmp}/shapes-dockerd.log"

say() { echo "docker-engine: $*" >&2; }

usage() {
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
}

check_only=false
case "${1:-}" in
  "") ;;
  --check) check_only=true ;;
  -h | --help)
    usage
    exit 0
    ;;
  *)
    say "unknown option ${1}"
    usage >&2
    exit 2
    ;;
esac

engine_running() { docker info >/dev/null 2>&1; }
compose_works() { docker compose version >/dev/null 2>&1; }

# The command prefix that runs as root, or a reason why nothing can be installed here.
as_root=()
why_not_installable=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
  else
    why_not_installable="not root and no password-less sudo"
  fi
fi
if [ -z "$why_not_installable" ] && ! command -v apt-get >/dev/null 2>&1; then
  why_not_installable="no apt-get (not a Debian-like machine)"
fi

if $check_only; then
  if engine_running && compose_works; then
    echo "ready: $(docker version --format 'engine {{.Server.Version}} (API {{.Server.APIVersion}})'), $(docker compose version --short 2>/dev/null | sed 's/^/compose v/;s/vv/v/')"
    exit 0
  fi
  # Not root (nor sudo): nothing can be installed or started. Root without apt-get: only an installed dockerd.
  if ! engine_running && [ -n "$why_not_installable" ] &&
    { [ "$(id -u)" -ne 0 ] && [ "${#as_root[@]}" -eq 0 ] || ! command -v dockerd >/dev/null 2>&1; }; then
    say "no Docker engine answers, and this user cannot install or start one: $why_not_installable"
    exit 3
  fi
  if ! compose_works && ! command -v go >/dev/null 2>&1; then
    say "no \`docker compose\` and no Go toolchain to build it with"
    exit 3
  fi
  echo "can be made ready: run bash scripts/docker-engine.sh"
  exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/docker-engine.lock"
if ! flock -n 9; then
  say "another run is preparing Docker; waiting for it"
  flock 9
fi

# --- 1. the engine ----------------------------------------------------------------------------------
if engine_running; then
  say "engine running: $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})')"
else
  need=()
  command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
  if [ "${#need[@]}" -gt 0 ]; then
    if [ -n "$why_not_installable" ]; then
      say "cannot install ${need[*]}: $why_not_installable"
      exit 3
    fi
    say "installing ${need[*]} (apt-get)"
    log="$(mktemp)"
    if ! { "${as_root[@]}" apt-get update -qq && "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; } >"$log" 2>&1; then
      say "cannot install ${need[*]}; apt-get said:"
      tail -n 20 "$log" >&2
      rm -f "$log"
      exit 1
    fi
    rm -f "$log"
  fi
  if [ -n "$why_not_installable" ] && [ "$(id -u)" -ne 0 ]; then
    say "dockerd is installed but not running, and cannot be started: $why_not_installable"
    exit 3
  fi
  say "starting dockerd (log: $dockerd_log)"
  # A pid file left by a dockerd that died makes the next one refuse to start.
  if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
    "${as_root[@]}" rm -f /var/run/docker.pid
  fi
  # 9>&-: dockerd must not inherit the lock, or it would hold it for as long as it runs.
  "${as_root[@]}" nohup dockerd >"$dockerd_log" 2>&1 </dev/null 9>&- &
  for _ in $(seq 1 60); do
    engine_running && break
    sleep 1
  done
  if ! engine_running; then
    say "cannot start dockerd: it did not answer within 60 s. Its last lines:"
    tail -n 20 "$dockerd_log" >&2
    exit 1
  fi
  say "engine running: $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})')"
fi

# --- 2. the Compose v2 CLI plugin -------------------------------------------------------------------
if ! compose_works; then
  if [ ! -x "$plugin_cache" ]; then
    if ! command -v go >/dev/null 2>&1; then
      say "cannot build docker compose $COMPOSE_VERSION: no Go toolchain (install Go, or the docker-compose-plugin package)"
      exit 3
    fi
    say "building docker compose $COMPOSE_VERSION from Go modules (once; 3 to 6 minutes on 2 cores)"
    mkdir -p "$(dirname "$plugin_cache")"
    build_log="$(mktemp)"
    started=$SECONDS
    CGO_ENABLED=0 nice -n 10 go build -C scripts/compose-cli -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
      -o "$plugin_cache.tmp.$$" github.com/docker/compose/v2/cmd >"$build_log" 2>&1 &
    build=$!
    while kill -0 "$build" 2>/dev/null; do
      sleep 5
      if kill -0 "$build" 2>/dev/null && [ $(((SECONDS - started) % 60)) -lt 5 ]; then
        say "still building docker compose ($((SECONDS - started)) s)"
      fi
    done
    if ! wait "$build"; then
      say "cannot build docker compose $COMPOSE_VERSION; go build said:"
      tail -n 20 "$build_log" >&2
      rm -f "$build_log" "$plugin_cache.tmp.$$"
      exit 1
    fi
    rm -f "$build_log"
    mv "$plugin_cache.tmp.$$" "$plugin_cache"
    say "built docker compose $COMPOSE_VERSION in $((SECONDS - started)) s"
  fi
  mkdir -p "$plugin_dir"
  ln -sf "$plugin_cache" "$plugin_dir/docker-compose"
  if ! compose_works; then
    say "cannot run docker compose after installing $plugin_dir/docker-compose:"
    docker compose version >&2 || true
    exit 1
  fi
fi
say "compose: $(docker compose version)"
