#!/usr/bin/env bash
# An outside project finds the installed package with find_package(moonmq) and plans with a custom goal.
# Usage: find_package_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d /tmp/moonmq-package-XXXXXX)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$src/examples/custom_goal" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  "${launcher[@]}" >/dev/null
cmake --build "$work/consumer" >/dev/null

out=$("$work/consumer/topic-spread-plan" "$src/examples/custom_goal/spread.json" --converge)
echo "$out"
# Each of the three topics starts on one broker; spread, every broker must end with one partition of each.
python3 - "$out" <<'PY'
import json, sys
plan = json.loads(sys.argv[1])
assert plan["converged"], "did not converge"
assert plan["satisfied"], "TOPIC_SPREAD not met"
assert len(plan["actions"]) == 6, f"expected 6 moves, got {len(plan['actions'])}"
for b in plan["brokers"]:
    assert b["after"]["partitions"] == 3, b
print("custom goal planned through find_package(moonmq): ok")
PY
