#!/bin/sh
# The full recall sweep of the sim device's planted kernel bugs (plugins/sim/recall.tsv): each row
# (a bug class at one of sim, sim:float16, sim:bfloat16), one run per row, over the whole op
# catalog (and the models where the table says "all"), with the recall table printed at the end:
# per class and dtype, how many cases of its allowed set caught it and how many missed it. CI runs
# the same checks on a fixed subset of the catalog (ctest -R integration_sim) and holds the misses
# to the table's counts; this takes several hours on a 2-core machine.
#   scripts/recall.sh [BUILD_DIR]   (default: build)
set -eu
build=${1:-build}
if [ ! -x "$build/tests/mpscheck_integration_tests" ]; then
  echo "recall.sh: $build/tests/mpscheck_integration_tests not found; build the tests first: cmake -S . -B $build -DMPSCHECK_BUILD_TESTS=ON && cmake --build $build -j2" >&2
  exit 2
fi
log=$(mktemp)
status=0
MPSCHECK_RECALL_FULL=1 "$build/tests/mpscheck_integration_tests" --gtest_color=no \
  --gtest_filter='Plants/SimRecall.*' >"$log" 2>&1 || status=$?
grep -E '^\[  (FAILED|PASSED) |Failure|unrelated|no case caught' "$log" || true
echo
echo "bug class | target | expected | caught, missed: cases | message"
grep '^recall | ' "$log" | sed 's/^recall | //'
rm -f "$log"
exit $status
