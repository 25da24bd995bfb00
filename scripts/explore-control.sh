#!/usr/bin/env bash
# Explore's control with no planted bug: PER_FAMILY float32 contiguous forward cases of every op
# family, explored for RUN_BUDGET seconds in all. On a target with no bug
# every finding it prints is a false one. Exits as `mpscheck explore` does (1: a finding).
#
#   scripts/explore-control.sh BUILD_DIR TARGET [PER_FAMILY=2] [RUN_BUDGET=600] [more explore flags]
#   scripts/explore-control.sh build sim 2 600 --plugin-dir build/test-plugins/sim
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 BUILD_DIR TARGET [PER_FAMILY] [RUN_BUDGET] [explore flags...]" >&2
  exit 2
fi
build=$1 target=$2 per_family=${3:-2} run_budget=${4:-600}
shift $(($# < 4 ? $# : 4))
# PER_FAMILY cases spread evenly over each family's float32 contiguous forward cases in id order
# (the first, then every len/PER_FAMILY-th), so a family's later ops are sampled too.
ids=$("$build/mpscheck" --ops --list "$@" 2>/dev/null | awk -v n="$per_family" '
  $1 ~ /\/f32\/contiguous\/forward$/ { split($1, p, "/"); f = p[2]; if (!(f in len)) order[++families] = f; id[f, len[f]++] = $1 }
  END { for (k = 1; k <= families; ++k) { f = order[k]; m = len[f] < n ? len[f] : n
          for (i = 0; i < m; ++i) print id[f, int(i * len[f] / m)] } }')
count=$(wc -l <<<"$ids")
filters=()  # one --filter per case: one alternation of them all is too much for std::regex
while read -r id; do filters+=(--filter "^$id\$"); done <<<"$ids"
# Each case gets an even share of the run's budget, so every family is reached.
per_case=$((run_budget / count > 5 ? run_budget / count : 5))
echo "explore-control: $count cases, ${per_case} s each, ${run_budget} s in all, target $target" >&2
exec "$build/mpscheck" explore --target "$target" "${filters[@]}" --explore-budget "$per_case" \
  --explore-run-budget "$run_budget" "$@"
