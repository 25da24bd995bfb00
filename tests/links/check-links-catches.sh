#!/usr/bin/env bash
# scripts/check-links.py must be able to fail: on a copy of the pages with one planted break, it
# must exit 1 and name the planted page:line and what is broken. One plant per kind of break (a
# link to a page that does not exist, an anchor no heading has, a link out of the tree, a heading
# renamed under the links that name it, a reference definition to a missing file), each in a fresh
# copy; and a link inside a code block or code span must not count.
# Usage: check-links-catches.sh SOURCE_DIR
set -u
src=${1:?usage: check-links-catches.sh SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# copy NAME: the pages and every folder a page may link to, without build output.
copy() {
  local dir=$work/$1
  mkdir -p "$dir"
  (cd "$src" && tar --exclude='./build*' --exclude=./.git -cf - .) | tar -xf - -C "$dir"
  echo "$dir"
}

# expect NAME DIR PAGE:LINE TEXT: the check on DIR exits 1 with a line "PAGE:LINE: broken link ..."
# containing TEXT.
expect() {
  local name=$1 dir=$2 where=$3 text=$4 out rc
  out=$(python3 "$src/scripts/check-links.py" "$dir" 2>&1)
  rc=$?
  if [[ $rc -ne 1 ]]; then
    echo "FAIL $name: exit $rc, expected 1. Output:"; echo "$out"; failures=$((failures + 1)); return
  fi
  if ! grep -F -- "$where: broken link" <<<"$out" | grep -qF -- "$text"; then
    echo "FAIL $name: no line '$where: broken link ...$text...'. Output:"; echo "$out"; failures=$((failures + 1)); return
  fi
  echo "ok   $name: $(grep -F -- "$where: " <<<"$out")"
}

# The unplanted tree passes, or the plants below prove nothing.
if ! out=$(python3 "$src/scripts/check-links.py" "$src" 2>&1); then
  echo "FAIL: the tree itself does not pass:"; echo "$out"; exit 1
fi

d=$(copy missing_page)
printf '\nSee [the timing page](timing-method.md).\n' >>"$d/docs/verdicts.md"
line=$(wc -l <"$d/docs/verdicts.md")
expect missing_page "$d" "docs/verdicts.md:$line" "there is no docs/timing-method.md"

d=$(copy missing_anchor)
printf '\nSee [the cache](docs/timing.md#the-reference-cash).\n' >>"$d/ARCHITECTURE.md"
line=$(wc -l <"$d/ARCHITECTURE.md")
expect missing_anchor "$d" "ARCHITECTURE.md:$line" "docs/timing.md has no heading whose anchor is #the-reference-cash"

d=$(copy same_page_anchor)
printf '\nAbove: [statuses](#status).\n' >>"$d/docs/verdicts.md"
line=$(wc -l <"$d/docs/verdicts.md")
expect same_page_anchor "$d" "docs/verdicts.md:$line" "docs/verdicts.md has no heading whose anchor is #status"

d=$(copy outside_tree)
printf '\nThe [design notes](../../shared/DESIGN.md).\n' >>"$d/docs/index.md"
line=$(wc -l <"$d/docs/index.md")
expect outside_tree "$d" "docs/index.md:$line" "points outside the tree"

# A heading renamed: every link that named its anchor breaks, and the first is reported where it is.
d=$(copy renamed_heading)
sed -i 's/^## Shards and merge$/## Sharding/' "$d/docs/ci.md"
where=$(grep -n '(#shards-and-merge)' "$d/docs/ci.md" | head -1 | cut -d: -f1)
expect renamed_heading "$d" "docs/ci.md:$where" "#shards-and-merge"

d=$(copy reference_definition)
printf '\n[recall]: plugins/sim/recall.csv\n' >>"$d/CONTRIBUTING.md"
line=$(wc -l <"$d/CONTRIBUTING.md")
expect reference_definition "$d" "CONTRIBUTING.md:$line" "there is no plugins/sim/recall.csv"

# Code is not prose: a broken link shown in a code block or a code span is no link.
d=$(copy code_is_not_a_link)
printf '\n```\n[not a link](nowhere.md)\n```\n\nType `[x](nowhere.md)` to link.\n' >>"$d/docs/index.md"
if out=$(python3 "$src/scripts/check-links.py" "$d" 2>&1); then
  echo "ok   code_is_not_a_link: $out"
else
  echo "FAIL code_is_not_a_link: a link inside code was checked. Output:"; echo "$out"; failures=$((failures + 1))
fi

[[ $failures -eq 0 ]] || { echo "$failures plant(s) not caught"; exit 1; }
echo "check-links caught every planted break"
