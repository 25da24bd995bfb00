#!/usr/bin/env bash
# scripts/check-layers.py must be able to fail: on a copy of the tree with one planted include that
# points the wrong way, it must exit 1 and name the planted file:line and the rule it breaks. One
# plant per kind of rule (a layer including a higher one, the SDK including util/, a plugin
# including the host, the SDK naming a header its target does not provide, a core/ file including
# a higher sub-layer of core/, a core/ file in no sub-layer), each in a fresh copy.
# Usage: check-layers-catches.sh SOURCE_DIR
set -u
src=${1:?usage: check-layers-catches.sh SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# plant NAME FILE LINE TEXT EXPECTED: insert TEXT as line LINE of FILE in a fresh copy, then expect
# exit 1 and a line starting "FILE:LINE: " and containing EXPECTED.
plant() {
  local name=$1 file=$2 line=$3 text=$4 expected=$5
  local copy=$work/$name
  mkdir -p "$copy/scripts"
  cp -r "$src/include" "$src/util" "$src/checks" "$src/reports" "$src/core" "$src/plugins" "$copy/"
  cp "$src/scripts/check-layers.py" "$copy/scripts/"
  sed -i "${line}i\\${text}" "$copy/$file"
  local out rc
  out=$(python3 "$copy/scripts/check-layers.py" "$copy" 2>&1)
  rc=$?
  if [[ $rc -ne 1 ]]; then
    echo "FAIL $name: exit $rc, expected 1. Output:"; echo "$out"; failures=$((failures + 1)); return
  fi
  if ! grep -F -- "$file:$line: " <<<"$out" | grep -qF -- "$expected"; then
    echo "FAIL $name: no line '$file:$line: ...$expected...'. Output:"; echo "$out"; failures=$((failures + 1)); return
  fi
  echo "ok   $name: $(grep -F -- "$file:$line: " <<<"$out")"
}

# The unplanted tree passes, or the plants below prove nothing.
if ! out=$(python3 "$src/scripts/check-layers.py" "$src" 2>&1); then
  echo "FAIL: the tree itself does not pass:"; echo "$out"; exit 1
fi
plant checks_includes_reports checks/tolerance.cpp 2 '#include "reports/report.hpp"' \
  "includes reports/report.hpp (reports/): checks/ includes only util/, the SDK and checks/"
plant util_includes_checks util/text.cpp 2 '#include "checks/compare.hpp"' "util/ is the ground floor"
plant reports_includes_core reports/csv.cpp 3 '#include <core/app.hpp>' "includes core/app.hpp (core/)"
plant sdk_includes_util include/mpscheck/vocabulary.hpp 3 '#include "util/text.hpp"' "the SDK (include/mpscheck/) is installed"
plant sdk_includes_nlohmann include/mpscheck/workload.hpp 3 '#include <nlohmann/json.hpp>' \
  "the installed SDK target provides"
plant plugin_includes_checks plugins/ops/distance/distance.cpp 2 '#include "checks/compare.hpp"' \
  "a plugin includes only the SDK"
# Inside core/: a base file including the execution sub-layer (core/target.cpp including the worker).
plant core_base_includes_execution core/target.cpp 2 '#include "core/worker.hpp"' \
  "includes core/worker.hpp (core/ execution) from core/ base: inside core/ a file includes only its own sub-layer"
plant core_execution_includes_commands core/run_loop.cpp 2 '#include "core/run_setup.hpp"' \
  "includes core/run_setup.hpp (core/ commands) from core/ execution"
# A new core/ file placed in no sub-layer is refused, so none slips past the ordering unplaced.
copy=$work/core_unplaced
mkdir -p "$copy/scripts"
cp -r "$src/include" "$src/util" "$src/checks" "$src/reports" "$src/core" "$src/plugins" "$copy/"
cp "$src/scripts/check-layers.py" "$copy/scripts/"
echo '#pragma once' >"$copy/core/unplaced_thing.hpp"
out=$(python3 "$copy/scripts/check-layers.py" "$copy" 2>&1)
if [[ $? -eq 1 ]] && grep -q "^core/unplaced_thing.hpp:1: core/unplaced_thing.hpp is in no sub-layer" <<<"$out"; then
  echo "ok   core_unplaced: $(grep '^core/unplaced_thing.hpp:1' <<<"$out")"
else
  echo "FAIL core_unplaced: the unplaced file was not named. Output:"; echo "$out"; failures=$((failures + 1))
fi
[[ $failures -eq 0 ]] || { echo "$failures plant(s) not caught"; exit 1; }
echo "check-layers caught every planted include"
