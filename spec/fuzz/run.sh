#!/bin/sh
# Runs each fuzzer (build-fuzz/fuzz_<name>) for the given seconds over its
# committed seeds (spec/fuzz/corpus/<name>) plus what earlier runs found
# (build-fuzz/corpus/<name>), prints one TAP line per fuzzer with its
# executions and time, and ends with "N passed, N failed" (mk/fuzz.mk).
# Usage: sh spec/fuzz/run.sh SECONDS NAME...
set -u
secs=$1
shift
passed=0
failed=0
n=0
mkdir -p build-fuzz/artifacts build-fuzz/logs
for name in "$@"; do
  n=$((n + 1))
  mkdir -p "build-fuzz/corpus/$name" "spec/fuzz/corpus/$name"
  log="build-fuzz/logs/$name.log"
  # -timeout: one input running this long is a hang; the outer timeout
  # catches a fuzzer that never stops.
  timeout -k 10 $((secs + 120)) "build-fuzz/fuzz_$name" -max_total_time="$secs" -timeout=25 \
    -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$name-" \
    "build-fuzz/corpus/$name" "spec/fuzz/corpus/$name" > "$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
  if [ $rc -eq 0 ] && [ -n "$runs" ]; then
    passed=$((passed + 1))
    echo "ok $n - fuzz $name: $runs executions in ${took:-$secs} s"
  else
    failed=$((failed + 1))
    echo "not ok $n - fuzz $name: exit status $rc after ${runs:-?} executions (log: $log)"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)' "$log" | head -n 5 | sed 's/^/   /'
  fi
done
echo "1..$n"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
