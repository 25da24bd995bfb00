#!/usr/bin/env bash
# Builds the host, the plugins the tests load and the tests with ASan+UBSan (-DMPSCHECK_SANITIZE=ON,
# in build-sanitize/) and runs the unit tests and the fault-injection, resume and hardening
# integration tests with them. Run it before every change to core/ or checks/ (docs/testing.md,
# "Hardening"). Exit 0 only if every test passed and no process wrote a sanitizer report.
#   scripts/sanitize.sh [--build-dir DIR] [--jobs N] [--no-build]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$root/build-sanitize
jobs=2
build=1
usage="usage: scripts/sanitize.sh [--build-dir DIR] [--jobs N] [--no-build]"
while (($#)); do
  case $1 in
    --build-dir) build_dir=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "sanitize.sh: unknown argument $1; $usage" >&2; exit 2 ;;
  esac
done
build_dir=$(mkdir -p "$build_dir" && cd "$build_dir" && pwd)
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
start=$(date +%s)
if ((build)); then
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPSCHECK_SANITIZE=ON -DMPSCHECK_PCH=OFF \
    -DMPSCHECK_BUILD_TESTS=ON >/dev/null
  # ops_activation and ops_shape: the fault run puts one healthy case of each around the faults.
  nice cmake --build "$build_dir" -j"$jobs" --target mpscheck mpscheck_unit_tests mpscheck_integration_tests \
    ops_activation ops_shape
fi
built=$(date +%s)

unit=$build_dir/tests/mpscheck_unit_tests
integration=$build_dir/tests/mpscheck_integration_tests
suites=(FaultRun Resume Hardening)
# gtest runs nothing and exits 0 when a filter matches no test: a renamed suite must fail here.
for s in "${suites[@]}"; do
  listed=$("$integration" --gtest_list_tests --gtest_filter="$s.*")
  if ! grep -q '^  ' <<<"$listed"; then
    echo "sanitize.sh: no integration test in suite $s; update the suite list in $0" >&2
    exit 2
  fi
done
filter=$(printf '%s.*:' "${suites[@]}")

# Every ASan report of every process (the test binaries, the mpscheck hosts they start, the
# workers) goes to its own file here (log_path, suffixed with the pid), so none is lost in a
# captured stderr that a test throws away. GCC's separate UBSan runtime ignores log_path (its call
# to set the path lands in libasan's copy) and writes to stderr: a worker's stderr is its
# worker.log under test-tmp, grepped below; a host's is in the failing test's message, since the
# report's exit code 87 is none the tests expect. Leftovers of an earlier run must not count.
reports=$build_dir/sanitizer-reports
rm -rf "$reports" "$build_dir/test-tmp"
mkdir -p "$reports"
# Leak checking is off: LibTorch keeps allocations until exit by design. The planted crashes of the
# faults plugin must stay real signals, so ASan does not take over SIGSEGV/SIGBUS/SIGFPE. A report
# ends the process that made it (UBSan too: -fno-sanitize-recover), which the tests then see fail.
export ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:abort_on_error=0:exitcode=86:log_path=$reports/report
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87:log_path=$reports/report
status=0
"$unit" --gtest_brief=1 || status=1
"$integration" --gtest_brief=1 --gtest_filter="${filter%:}" || status=1
found=$(grep -l -r -E "ERROR: AddressSanitizer|runtime error:|SUMMARY: UndefinedBehaviorSanitizer" \
  "$reports" "$build_dir/test-tmp" 2>/dev/null || true)
if [[ -n $found ]]; then
  status=1
  echo "sanitize.sh: sanitizer reports in $(wc -l <<<"$found") file(s):" >&2
  while read -r f; do
    echo "== $f" >&2
    head -40 "$f" >&2
  done <<<"$found"
fi
end=$(date +%s)
echo "sanitize.sh: build $((built - start)) s, tests $((end - built)) s, $([[ $status == 0 ]] && echo clean || echo FAILED)"
exit $status
