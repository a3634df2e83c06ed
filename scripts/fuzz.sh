#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (in build-fuzz/) and runs each for FUZZ_SECONDS (default 60), starting
# from its checked-in corpus (fuzz/corpus/TARGET, never written to: new inputs go to a scratch directory). Prints one
# line per target, "fuzz TARGET: N execs, M crashes", and exits non-zero if any target crashed; the crashing inputs
# are kept in build-fuzz/artifacts/TARGET/ (copy one into fuzz/corpus/TARGET/ to make it a regression test).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD:-build-fuzz}
targets=(http1_request http1_response json_reader config_loader record_frames raft_message planner_snapshot txn_record topic_metadata kafka_request)

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DMOONMQ_FUZZ=ON -DMOONMQ_BUILD_TESTS=OFF -DMOONMQ_BUILD_BENCHMARKS=OFF \
  -DMOONMQ_BUILD_EXAMPLES=OFF -DMOONMQ_BUILD_TOOLS=OFF -DMOONMQ_INSTALL=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null

failed=0
for t in "${targets[@]}"; do
  scratch="$build/scratch/$t"
  artifacts="$build/artifacts/$t"
  rm -rf "$scratch" "$artifacts"
  mkdir -p "$scratch" "$artifacts"
  log="$build/$t.log"
  set +e
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/fuzz/fuzz_$t" "$scratch" "fuzz/corpus/$t" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -E '^stat::number_of_executed_units:' "$log" | awk '{print $2}' | tail -n 1 || true)
  [ -n "$execs" ] || execs=$(grep -oE 'Done [0-9]+ runs' "$log" | awk '{print $2}' | tail -n 1 || true)
  crashes=$(find "$artifacts" -type f | wc -l)
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
  echo "fuzz $t: ${execs:-0} execs, $crashes crashes"
  if [ "$crashes" -ne 0 ]; then
    failed=1
    tail -n 30 "$log" | sed "s/^/  $t: /"
  fi
done
exit $failed
