#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang and runs them.
#   scripts/fuzz.sh                      every harness for 10 minutes each
#   scripts/fuzz.sh --time 30 journal    one harness for 30 s (ctest's fuzz label runs 20 s each)
#   scripts/fuzz.sh --build-only         just build (ctest's fuzz_build)
# Options: --build-dir DIR (default build/fuzz), --time SEC, --jobs N, --build-only, --no-build.
# New inputs found while fuzzing go to DIR/corpus/NAME (the seed corpus in tests/fuzz/corpus is
# only read); a crash leaves DIR/artifacts/NAME-crash-* and a non-zero exit. Fix the bug, then copy
# the artifact into tests/fuzz/corpus/NAME so it stays covered.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$root/build/fuzz
seconds=600
jobs=2
build_only=0
no_build=0
names=()
while (($#)); do
  case $1 in
    --build-dir) build_dir=$2; shift 2 ;;
    --time) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --no-build) no_build=1; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1; see scripts/fuzz.sh --help" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
all=(input_spec target_spec expectations report_json journal worker_protocol host_text elf_deps)
((${#names[@]})) || names=("${all[@]}")

clangxx=$(command -v clang++-14 || command -v clang++ || true)
if [[ -z $clangxx ]]; then
  echo "fuzz.sh: clang++ not found; install clang and libclang-rt-14-dev (scripts/install-deps.sh --with-test-tools)" >&2
  exit 2
fi
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
if ((!no_build)) && [[ ! -f $build_dir/CMakeCache.txt ]]; then
  cmake -S "$root/tests/fuzz" -B "$build_dir" -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
targets=()
for n in "${names[@]}"; do targets+=(--target "fuzz_$n"); done
((no_build)) || nice cmake --build "$build_dir" -j"$jobs" "${targets[@]}"
((build_only)) && exit 0

status=0
for n in "${names[@]}"; do
  work=$build_dir/corpus/$n
  mkdir -p "$work" "$build_dir/artifacts"
  log=$build_dir/fuzz_$n.log
  dict=()
  case $n in report_json|journal|worker_protocol) dict=(-dict="$root/tests/fuzz/json.dict") ;; esac
  # -rss_limit_mb: a parser that needs more than this for a 4 KiB input is a bug too.
  if ! "$build_dir/fuzz_$n" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 "${dict[@]}" -artifact_prefix="$build_dir/artifacts/$n-" \
       "$work" "$root/tests/fuzz/corpus/$n" >"$log" 2>&1; then
    status=1
    echo "fuzz_$n: FAILED; see $log and $build_dir/artifacts/$n-*" >&2
    grep -E "ERROR|runtime error|==ERROR|deadly signal|uncaught" "$log" | head -5 >&2 || true
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  echo "fuzz_$n: ${execs:-?} inputs in ${seconds} s, ${rate:-?} exec/s, corpus $(ls "$work" | wc -l) files"
done
exit $status
