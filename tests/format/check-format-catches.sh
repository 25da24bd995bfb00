#!/usr/bin/env bash
# scripts/check-format.sh must be able to fail: in a copy of the tree where one file has a
# statement re-indented, it must exit 1 and name that file, and --fix must make the copy pass.
# Usage: check-format-catches.sh SOURCE_DIR
set -u
src=${1:?usage: check-format-catches.sh SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/scripts"
cp -r "$src/include" "$src/util" "$src/checks" "$src/reports" "$src/core" "$src/plugins" "$src/tests" \
  "$src/bench" "$src/examples" "$src/.clang-format" "$work/"
cp "$src/scripts/check-format.sh" "$work/scripts/"
sed -i 's/^namespace mpscheck {$/namespace   mpscheck {/' "$work/checks/verdict.cpp"
grep -q '^namespace   mpscheck {$' "$work/checks/verdict.cpp" || { echo "plant did not apply"; exit 1; }
out=$("$work/scripts/check-format.sh" "$work")
rc=$?
if [[ $rc -ne 1 ]] || ! grep -q '^checks/verdict.cpp: not formatted' <<<"$out"; then
  echo "check-format did not name the planted file (rc $rc):"
  echo "$out"
  exit 1
fi
"$work/scripts/check-format.sh" "$work" --fix
if ! "$work/scripts/check-format.sh" "$work" >/dev/null; then
  echo "check-format --fix left the copy unformatted"
  exit 1
fi
echo "check-format named the planted file and --fix repaired it"
