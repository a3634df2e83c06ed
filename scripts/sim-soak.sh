#!/bin/sh
# The whole-cluster simulation for longer than make test runs it: SEEDS seeds (default 50000) from FIRST (default 1)
# in each mode (local tables and the fence, and Raft), split into SLICES processes (default: the number of cores;
# each run is one thread). Prints each slice's summary line and exits non-zero if any seed failed; a failing seed's
# log is in that slice's output file under OUT (default build/sim-soak). Replay one with: CLUSTER_SIM_SEED=N build/test/moonmq_tests "cluster simulation: seeded*"
set -eu
BIN=${BIN:-build/test/moonmq_tests}
SEEDS=${SEEDS:-50000}
FIRST=${FIRST:-1}
SLICES=${SLICES:-$(nproc)}
OUT=${OUT:-build/sim-soak}
mkdir -p "$OUT"
per=$(( (SEEDS + SLICES - 1) / SLICES ))
start=$(date +%s)
pids=""
i=0
while [ $i -lt "$SLICES" ]; do
  from=$(( FIRST + i * per ))
  count=$per
  last=$(( FIRST + SEEDS - 1 ))
  [ $(( from + count - 1 )) -gt "$last" ] && count=$(( last - from + 1 ))
  if [ "$count" -gt 0 ]; then
    CLUSTER_SIM_FIRST=$from CLUSTER_SIM_SEEDS=$count "$BIN" "cluster simulation: seeded*" > "$OUT/slice-$i.log" 2>&1 &
    pids="$pids $!"
  fi
  i=$(( i + 1 ))
done
failed=0
for p in $pids; do wait "$p" || failed=1; done
grep -h "^cluster simulation (" "$OUT"/slice-*.log || true
verdict=passed
[ $failed -eq 0 ] || verdict="FAILED: see $OUT"
echo "sim-soak: $SEEDS seeds per mode from $FIRST in $SLICES slices, $(( $(date +%s) - start )) s, $verdict"
exit $failed
