#!/usr/bin/env bash
# Every C++ source in the tree is laid out as .clang-format says. Run by ctest `format`.
# Exit 0: all formatted. Exit 1: names each file that is not, with the command that fixes it.
# Exit 2: no clang-format-14 (scripts/install-deps.sh --with-test-tools installs it); the check
# needs that exact version, because other versions break lines differently.
# Usage: check-format.sh SOURCE_DIR [--fix]
set -u
src=${1:?usage: check-format.sh SOURCE_DIR [--fix]}
fix=${2:-}
tool=$(command -v clang-format-14 || true)
if [[ -z $tool ]]; then
  echo "check-format: clang-format-14 not found; install it (scripts/install-deps.sh --with-test-tools)" >&2
  exit 2
fi
cd "$src" || exit 2
# Every C++ file under the source folders, whether or not this is a git checkout.
mapfile -t files < <(find include util checks reports core plugins tests bench examples \
  -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) -not -path '*/build*' | sort)
if [[ $fix == --fix ]]; then
  "$tool" -i "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "$tool" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "$f: not formatted; run: clang-format-14 -i $f (or scripts/check-format.sh . --fix)"
    bad=$((bad + 1))
  fi
done
if ((bad)); then
  echo "check-format: $bad of ${#files[@]} files not formatted"
  exit 1
fi
echo "check-format: ${#files[@]} files formatted as .clang-format says"
