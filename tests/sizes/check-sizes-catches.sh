#!/usr/bin/env bash
# scripts/check-sizes.py must be able to fail: on a copy of the tree with one planted long function
# or long file, it must exit 1 and name the planted file:line. One plant per shape the heuristic
# must see through (a free function, a member function defined in its class, a function whose body
# holds braces in strings, comments and lambdas, a catalog not on the exemption list, a long file),
# each in a fresh copy.
# Usage: check-sizes-catches.sh SOURCE_DIR
set -u
src=${1:?usage: check-sizes-catches.sh SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# body N: N statement lines, with braces in a string, a comment and a lambda along the way.
body() {
  local n=$1 i
  echo '  int total = 0;  // a "}" in a comment: }'
  echo '  const char* brace = "}}}";'
  echo '  auto add = [&](int k) { total += k; };'
  for ((i = 0; i < n; ++i)); do echo "  add($i);"; done
  echo "  return total + (brace[0] == '}' ? 1 : 0);"
}

# plant NAME FILE LINE OFFSET EXPECTED: the text on stdin inserted before line LINE of FILE in a fresh
# copy (LINE 0: appended), then expect exit 1 and a line starting "FILE:N: " containing EXPECTED,
# where N is the line of the plant's OFFSET-th line (1: its first), the function's signature.
plant() {
  local name=$1 file=$2 line=$3 offset=$4 expected=$5
  local copy=$work/$name text
  text=$(cat)
  mkdir -p "$copy/scripts"
  cp -r "$src/include" "$src/util" "$src/checks" "$src/reports" "$src/core" "$src/plugins" "$src/bench" \
    "$src/examples" "$copy/"
  cp "$src/scripts/check-sizes.py" "$copy/scripts/"
  local at=$line
  if [[ $line -eq 0 ]]; then
    at=$(( $(wc -l <"$copy/$file") + 1 ))
    printf '%s\n' "$text" >>"$copy/$file"
  else
    { head -n $((line - 1)) "$copy/$file"; printf '%s\n' "$text"; tail -n +"$line" "$copy/$file"; } >"$copy/$file.new"
    mv "$copy/$file.new" "$copy/$file"
  fi
  at=$((at + offset - 1))
  local out rc
  out=$(python3 "$copy/scripts/check-sizes.py" "$copy" 2>&1)
  rc=$?
  if [[ $rc -ne 1 ]]; then
    echo "FAIL $name: exit $rc, expected 1. Output:"; echo "$out"; failures=$((failures + 1)); return
  fi
  if ! grep -F -- "$file:$at: " <<<"$out" | grep -qF -- "$expected"; then
    echo "FAIL $name: no line '$file:$at: ...$expected...'. Output:"; echo "$out"; failures=$((failures + 1)); return
  fi
  echo "ok   $name: $(grep -F -- "$file:$at: " <<<"$out")"
}

# The unplanted tree passes, or the plants below prove nothing.
if ! out=$(python3 "$src/scripts/check-sizes.py" "$src" 2>&1); then
  echo "FAIL: the tree itself does not pass:"; echo "$out"; exit 1
fi
# 101 lines from signature to closing brace: one over.
{ echo 'namespace mpscheck {'; echo 'int planted_long(int x,'; echo '                 int y) {'; body 94; echo '}'; echo '}'; } |
  plant free_function checks/tolerance.cpp 0 2 "function planted_long is 101 lines"
# Exactly 100 lines passes: the same plant one statement shorter must not be named.
{ echo 'namespace mpscheck {'; echo 'int planted_ok(int x,'; echo '                 int y) {'; body 93; echo '}'; echo '}'; } \
  >"$work/ok.txt"
copy=$work/at_limit; mkdir -p "$copy/scripts"
cp -r "$src/include" "$src/util" "$src/checks" "$src/reports" "$src/core" "$src/plugins" "$src/bench" "$src/examples" "$copy/"
cp "$src/scripts/check-sizes.py" "$copy/scripts/"; cat "$work/ok.txt" >>"$copy/checks/tolerance.cpp"
if ! out=$(python3 "$copy/scripts/check-sizes.py" "$copy" 2>&1); then
  echo "FAIL at_limit: a 100-line function was refused:"; echo "$out"; failures=$((failures + 1))
else
  echo "ok   at_limit: a function of exactly 100 lines passes"
fi
{ echo 'struct Planted {'; echo '  int member() const {'; body 120; echo '  }'; echo '};'; } |
  plant member_function reports/reporter.hpp 0 2 "function member is"
{ echo 'MPSCHECK_CATALOG(planted_cases) {'; body 110; echo '}'; } |
  plant catalog_not_exempt plugins/ops/distance/distance.cpp 0 1 "function MPSCHECK_CATALOG(planted_cases) is"
# A long file names line 1 of the file.
copy=$work/long_file_line
mkdir -p "$copy/scripts"; cp -r "$src/include" "$src/util" "$src/checks" "$src/reports" "$src/core" "$src/plugins" \
  "$src/bench" "$src/examples" "$copy/"
cp "$src/scripts/check-sizes.py" "$copy/scripts/"
for i in $(seq 1 650); do echo "// line $i"; done >>"$copy/util/text.cpp"
out=$(python3 "$copy/scripts/check-sizes.py" "$copy" 2>&1)
if [[ $? -eq 1 ]] && grep -q "^util/text.cpp:1: the file is [0-9]* lines (at most 600)" <<<"$out"; then
  echo "ok   long_file_line: util/text.cpp:1 named as too long"
else
  echo "FAIL long_file_line: util/text.cpp:1 not named"; failures=$((failures + 1))
fi
[[ $failures -eq 0 ]] || { echo "$failures plant(s) not caught"; exit 1; }
echo "check-sizes caught every planted long function and file"
