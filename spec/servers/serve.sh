#!/bin/sh
# Try the remote providers offline: `make serve-platform`, `make
# serve-modal`, `make serve-container` (this script: serve.sh platform|modal|
# container [PORT]). Starts a reference server (or the emulated Apple
# `container` CLI) in the foreground, prints the variables that point
# sandkit, the README's examples and `sandkit exec --provider ...` at it, and
# writes them to build/serve/<provider>.env as well ($SANDKIT_SERVE_DIR/
# instead when set). Runs until interrupted
# (Ctrl-C); then the server, every command it ran and its state are gone.
# The server also exits when this script dies in any other way: it reads
# its stdin from a pipe only this script holds.
set -eu

provider=${1:-}
port=${2:-0}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
case $provider in
  platform|modal|container) ;;
  *) echo "usage: serve.sh platform|modal|container [PORT]" >&2; exit 2 ;;
esac
case $port in
  ''|*[!0-9]*) echo "serve.sh: PORT must be a number (got '$port')" >&2; exit 2 ;;
esac

dir=$(mktemp -d "${TMPDIR:-/tmp}/sandkit-serve.XXXXXX")
env_dir=${SANDKIT_SERVE_DIR:-$root/build/serve}
env_file=$env_dir/$provider.env
pid=
cleanup() {
  trap - EXIT INT TERM
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if [ "$provider" = container ] && [ -x "$dir/bin/container" ]; then
    "$dir/bin/container" _reap-all --delete >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  rm -f "$env_file"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mkdir -p "$env_dir"

if [ "$provider" = container ]; then
  # not a server: a `container` on PATH that keeps its containers in $dir
  mkdir -p "$dir/bin" "$dir/state"
  {
    echo '#!/bin/sh'
    echo "SANDKIT_CONTAINER_STATE='$dir/state'; export SANDKIT_CONTAINER_STATE"
    echo "exec '$here/container/container' \"\$@\""
  } > "$dir/bin/container"
  chmod 755 "$dir/bin/container"
  printf 'export PATH=%s:"$PATH"\n' "$dir/bin" > "$dir/env"
  what="the emulated Apple container CLI (containers in $dir/state)"
else
  if [ ! -d "$here/$provider/node_modules" ]; then
    echo "serve.sh: run 'make npm-deps' first (the $provider server's node modules are missing)" >&2
    exit 1
  fi
  mkfifo "$dir/in" "$dir/out"
  if [ "$provider" = platform ]; then
    node "$here/platform/server.mjs" --port "$port" --quiet < "$dir/in" > "$dir/out" 2> "$dir/log" &
  else
    node "$here/modal/server.mjs" --port "$port" < "$dir/in" > "$dir/out" 2> "$dir/log" &
  fi
  pid=$!
  exec 3> "$dir/in" 4< "$dir/out"
  if ! read -r line <&4 || [ "${line#LISTENING }" = "$line" ]; then
    echo "serve.sh: the $provider server did not start:" >&2
    cat "$dir/log" >&2
    exit 1
  fi
  listen=${line#LISTENING }
  listen=${listen%% *}
  url=http://127.0.0.1:$listen
  if [ "$provider" = platform ]; then
    cat > "$dir/env" <<EOF
export MASTRA_WORKSPACE_PROXY_URL=$url
export MASTRA_PLATFORM_ACCESS_TOKEN=test-token
export MASTRA_PROJECT_ID=proj_local
export MASTRA_ENVIRONMENT_ID=env_local
export MASTRA_PLATFORM_BUCKET_NAME=local-bucket
EOF
    what="the Mastra Platform reference server on $url"
  else
    cat > "$dir/env" <<EOF
export MODAL_SERVER_URL=$url
export MODAL_TOKEN_ID=ak-test
export MODAL_TOKEN_SECRET=as-test
EOF
    what="the Modal reference server on $url"
  fi
fi

# whole or not at all, for a reader waiting for it
cp "$dir/env" "$env_file.part" && mv -f "$env_file.part" "$env_file"
cat "$env_file"
echo "# $what" >&2
echo "# in another shell: . $env_file   (or paste the lines above); Ctrl-C here stops it" >&2

if [ -n "$pid" ]; then
  wait "$pid" || true
  echo "serve.sh: the $provider server exited:" >&2
  tail -n 20 "$dir/log" >&2
  pid=
  exit 1
fi
# the container CLI needs nothing running: wait for the interrupt (a
# background sleep, so that a signal is handled at once)
while :; do
  sleep 3600 &
  pid=$!
  wait "$pid" || true
done
