#!/bin/sh
# Runs every test (busted specs, C test programs, reference-server tests)
# and ends with one line: "N passed, N failed[, N skipped]" (CI reads it).
set -u
LUA=${LUA:-lua5.4}
export LUA # the interpreter of child scripts too (spec/helpers/child.lua)
# Sanitizer runs (mk/sanitizers.mk): SANDKIT_BUILD is the build directory
# (default build), SANDKIT_WRAP a command prefix for Lua and the C tests
# (valgrind, or the ASan preload wrapper); wrapped runs skip the node tests,
# which never load the C core.
build=${SANDKIT_BUILD:-build}
wrap=${SANDKIT_WRAP:-}
root=$(pwd)
out="$root/$build/test-results"
rm -rf "$out"
mkdir -p "$out"
export LUA_CPATH="$root/$build/?.so;;"
export LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;$root/spec/?.lua;;"

# A runner that crashed or hung without printing a verdict counts as failed.
run_tap() { # name, command...
  name=$1; shift
  printf '== %s\n' "$name"
  timeout -k 10 "${SANDKIT_TEST_TIMEOUT:-900}" "$@" > "$out/$name.tap" 2>&1
  rc=$?
  if [ $rc -ne 0 ] && ! grep -q '^not ok' "$out/$name.tap"; then
    # what it printed last, as diagnostics of the failure
    { echo "not ok 0 - $name exited with status $rc"; tail -n 15 "$out/$name.tap" | sed 's/^/# /'; } > "$out/$name.tail"
    cat "$out/$name.tail" >> "$out/$name.tap"
    rm -f "$out/$name.tail"
  fi
  # Each failure with the diagnostic lines under it: CI keeps only this
  # output, and a failure that happens once must be readable from it.
  awk '/^not ok/ { print "   " $0; n = 15; next }
       n > 0 && /^#/ { print "     " $0; n--; next }
       { n = 0 }' "$out/$name.tap"
}

# SANDKIT_SPECS: only these spec files, and neither the C tests nor the
# node tests, which load no Lua (the runs under the other interpreters,
# mk/lua.mk).
only=${SANDKIT_SPECS:-}
for f in ${only:-$(ls spec/*_spec.lua spec/*/*_spec.lua 2>/dev/null | sort)}; do
  name=$(echo "$f" | sed 's|^spec/||; s|/|-|g; s|\.lua$||')
  run_tap "$name" $wrap "$LUA" /usr/bin/busted --cpath="$root/$build/?.so" -o TAP "$f"
done
for t in "$build"/test/*_test; do
  [ -x "$t" ] && [ -z "$only" ] && run_tap "$(basename "$t")" $wrap "$t"
done
for f in spec/servers/*/test/*.test.mjs; do
  [ -f "$f" ] && [ -z "$wrap" ] && [ -z "$only" ] || continue
  name=$(echo "$f" | sed 's|^spec/servers/||; s|/test/|-|; s|\.test\.mjs$||')
  run_tap "node-$name" node --test --test-reporter=tap "$f"
done

# Count top-level TAP results; "# SKIP"/"# TODO" ones are skipped.
cat "$out"/*.tap | awk '
  /^ok / { if ($0 ~ /# (SKIP|skip|TODO|todo)/) s++; else p++ }
  /^not ok / { if ($0 ~ /# (TODO|todo)/) s++; else f++ }
  END {
    line = sprintf("%d passed, %d failed", p, f)
    if (s) line = line sprintf(", %d skipped", s)
    print line
    exit (f > 0)
  }'
