#!/usr/bin/env bash
# Builds the host, the plugins and the tests with ASan+UBSan (-DMPSCHECK_SANITIZE=ON, in
# build-sanitize/) and runs the unit tests and the fault-injection integration tests with them.
# Run it before every change to core/ or checks/ (README: "Trust and hardening").
#   scripts/sanitize.sh [--build-dir DIR] [--jobs N]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$root/build-sanitize
jobs=2
while (($#)); do
  case $1 in
    --build-dir) build_dir=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) echo "sanitize.sh: unknown argument $1; usage: scripts/sanitize.sh [--build-dir DIR] [--jobs N]" >&2; exit 2 ;;
  esac
done
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
start=$(date +%s)
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPSCHECK_SANITIZE=ON >/dev/null
nice cmake --build "$build_dir" -j"$jobs" --target mpscheck mpscheck_unit_tests mpscheck_integration_tests
built=$(date +%s)
# Leak checking is off: LibTorch keeps allocations until exit by design. The planted crashes of the
# faults plugin must stay real signals, so ASan does not take over SIGSEGV/SIGBUS/SIGFPE. Any ASan
# or UBSan report in a worker ends that worker, which the tests see as an unexpected crash.
export ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:abort_on_error=0:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87
status=0
"$build_dir/tests/mpscheck_unit_tests" --gtest_brief=1 || status=1
"$build_dir/tests/mpscheck_integration_tests" --gtest_brief=1 \
  --gtest_filter='FaultRun.*:Resume.*:Hardening.*' || status=1
# A sanitizer report inside a worker lands in its log: look there too.
if grep -rl -E "ERROR: AddressSanitizer|runtime error:" "$build_dir/test-tmp" 2>/dev/null | head -5 | grep .; then
  echo "sanitize.sh: sanitizer reports in the worker logs above" >&2
  status=1
fi
end=$(date +%s)
echo "sanitize.sh: build $((built - start)) s, tests $((end - built)) s, $([[ $status == 0 ]] && echo clean || echo FAILED)"
exit $status
