#!/usr/bin/env bash
# The OpInfo cases against OpInfo itself (ctest opinfo_coverage, opinfo_oracle):
#   check.sh coverage BUILD_DIR SOURCE_DIR   docs/opinfo-coverage.md is what the build's export and case
#                                            list give, and the covered share of the OpInfo entries with
#                                            an MPS kernel has not fallen below its floor
#   check.sh oracle BUILD_DIR SOURCE_DIR     the quick OpInfo cases on the CPU, each float16/bfloat16 one in
#                                            its own dtype: their `unsupported` verdicts agree with the dtypes
#                                            OpInfo declares for the CPU in at least 90% of (entry, dtype,
#                                            direction) groups, every difference printed
# Exit 0 when it holds, 1 when not, 2 on usage.
set -euo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: check.sh coverage|oracle BUILD_DIR SOURCE_DIR" >&2
  exit 2
fi
what=$1 build=$2 src=$3
export_file=$build/plugins/opinfo-calls.pt
if [[ ! -f $export_file ]]; then
  echo "check.sh: $export_file is missing: the build exports it (target opinfo_calls; scripts/install-deps.sh installs expecttest)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $what in
  coverage)
    "$build/mpscheck" --list >"$tmp/list.txt"
    # The floor is the share measured when the table was written (84.6%, docs/opinfo.md says what
    # the rest lacks); the goal of 90% is not reached.
    python3 "$src/scripts/opinfo-coverage.py" --export "$export_file" --list "$tmp/list.txt" \
      --check "$src/docs/opinfo-coverage.md" --min-percent 84
    ;;
  oracle)
    rc=0
    "$build/mpscheck" --filter '^op/opinfo/' --quick --target cpu --min-time 0 --report-dir "$tmp/run" \
      >"$tmp/run.log" 2>&1 || rc=$?
    if [[ $rc -ne 0 && $rc -ne 1 ]]; then
      tail -5 "$tmp/run.log" >&2
      echo "check.sh: mpscheck exited $rc over the OpInfo cases" >&2
      exit 1
    fi
    python3 "$src/scripts/opinfo-oracle.py" --export "$export_file" --report "$tmp/run/report.json" \
      --min-agreement 90 --differences
    ;;
  *)
    echo "check.sh: unknown check '$what' (coverage or oracle)" >&2
    exit 2
    ;;
esac
