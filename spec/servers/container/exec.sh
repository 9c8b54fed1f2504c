# Runs `container exec` inside a cleared environment (env -i). $1 is the plan file
# container.lua wrote (mode 0600): it exports the process environment, sets the
# __sk_* variables and sets "$@" to the nsenter command line. The plan holds env
# values, so it is removed as soon as it is read.
# The plan replaces "$@", so its path is kept first; only a plan file is removed.
__sk_plan=$1
. "$__sk_plan"
case $__sk_plan in */.plan.*) /usr/bin/rm -f -- "$__sk_plan" ;; esac

if [ "$__sk_interactive" = 1 ]; then exec 3<&0; else exec 3</dev/null; fi

if [ "$__sk_detach" = 1 ]; then
  /usr/bin/setsid "$@" <&3 >/dev/null 2>&1 &
  printf '%s\n' "$__sk_cid"
  exit 0
fi

"$@" <&3 3<&- &
__sk_child=$!
exec 3<&-

# Like Apple's non-TTY exec, signals sent to the CLI go to the process: nsenter's
# child, which is the command inside the container's namespaces.
__sk_forward() {
  for __sk_p in $(/usr/bin/pgrep -P "$__sk_child"); do kill -s "$1" "$__sk_p" 2>/dev/null; done
}
trap '__sk_forward TERM' TERM
trap '__sk_forward INT' INT
trap '__sk_forward HUP' HUP
trap '__sk_forward USR1' USR1
trap '__sk_forward USR2' USR2

while :; do
  wait "$__sk_child"
  __sk_rc=$?
  # a trapped signal interrupts wait while the child still runs: wait again
  if kill -0 "$__sk_child" 2>/dev/null; then continue; fi
  exit "$__sk_rc"
done
