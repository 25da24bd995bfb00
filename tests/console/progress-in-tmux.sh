#!/usr/bin/env bash
# The console in a real terminal (issue 52 item 3): mpscheck runs inside a tmux pane, and the pane's
# text is read back with capture-pane. While a case hangs (the faults plugin's `hang`, killed at
# --timeout), the pane's last line must be the progress line: the count, cases per second, the
# time left, the findings so far and the case running. When the run ends, the findings that
# happened must each have kept a line with its message, no passing case a line of its own, and the
# run's last line and summary must follow. Then --verbose in a pane keeps every case's line, and the
# same run into a pipe (no terminal) writes every case's line and no redraw.
# Usage: progress-in-tmux.sh BUILD_DIR
set -u
build=${1:?usage: progress-in-tmux.sh BUILD_DIR}
if ! command -v tmux >/dev/null; then
  echo "FAIL: tmux is not installed (scripts/install-deps.sh --with-test-tools installs it)"; exit 1
fi
work=$(mktemp -d)
socket=$work/tmux.sock
trap 'tmux -S "$socket" kill-server 2>/dev/null; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL $1"; [[ -n "${2:-}" ]] && echo "$2"; failures=$((failures + 1)); }

# Two healthy ops, three planted findings, and a hang that holds the run for --timeout seconds.
filter='^op/faults/(hang|nan|wrong|unsupported)$|^op/activation/(gelu|relu)/f32/contiguous/forward$'
args=(--filter "$filter" --target cpu --plugin-dir "$build/test-plugins" --min-time 0 --jobs 1 --timeout 6)

# run_in_pane NAME EXTRA...: starts the run in a fresh 160x50 pane; the shell prints DONE and the exit
# code when it ends.
run_in_pane() {
  local name=$1; shift
  tmux -S "$socket" new-session -d -s "$name" -x 160 -y 50
  tmux -S "$socket" send-keys -t "$name" \
    "$build/mpscheck ${args[*]@Q} --report-dir $work/$name $* 2>/dev/null; echo DONE \$?" Enter
}
capture() { tmux -S "$socket" capture-pane -p -J -t "$1" | sed "s/ *$//"; }  # -J keeps trailing blanks: drop them
wait_for() {  # wait_for NAME REGEX SECONDS: until the pane shows a line matching REGEX
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    capture "$1" | grep -qE "$2" && return 0
    sleep 0.1
  done
  return 1
}

run_in_pane live
# The hang is in flight: the last line of the pane is the progress line naming it.
if wait_for live '\| op/faults/hang$' 60; then
  last=$(capture live | grep -v '^$' | tail -1)
  if [[ "$last" =~ ^\[[0-9]+/6\]\ ([0-9.]+|--)\ cases/s,\ [^,]+\ left,\ [0-9]+\ findings?\ \|\ op/faults/hang$ ]]; then
    echo "ok   progress line while a case runs: $last"
  else
    fail "progress line: the pane's last line is not the progress line" "$(capture live)"
  fi
else
  fail "progress line: no line named the case in flight within 60 s" "$(capture live)"
fi
if ! wait_for live '^DONE [0-9]+$' 120; then
  fail "the run did not end within 120 s" "$(capture live)"
fi
pane=$(capture live)
for want in '^\[[0-9]/6\] nan +op/faults/nan$' '^\[[0-9]/6\] mismatch +op/faults/wrong$' \
  '^\[[0-9]/6\] unsupported +op/faults/unsupported$' '^\[[0-9]/6\] timeout +op/faults/hang$' \
  '^6 of 6 cases in [0-9]+s \([0-9.]+ cases/s\), 4 findings$' '^Summary \(6 cases, target cpu\)$' '^DONE 1$'; do
  if grep -qE "$want" <<<"$pane"; then echo "ok   kept: $(grep -E "$want" <<<"$pane" | head -1)"; else fail "no line matching $want" "$pane"; fi
done
# Each finding's message sits on the line under it.
if grep -A1 -E '^\[[0-9]/6\] mismatch +op/faults/wrong$' <<<"$pane" | tail -1 | grep -qE '^      .*outside tolerance'; then
  echo "ok   the mismatch's message follows it"
else
  fail "the mismatch's message is not under its line" "$pane"
fi
if grep -qE '^\[[0-9]/6\] pass ' <<<"$pane"; then fail "a passing case kept a line of its own on a terminal" "$pane"; else echo "ok   no passing case has a line"; fi
if grep -qE 'cases/s, .* left' <<<"$pane"; then fail "a progress line was left on screen after the run" "$pane"; else echo "ok   the progress line is gone"; fi

run_in_pane verbose --verbose
if wait_for verbose '^DONE [0-9]+$' 120; then
  n=$(capture verbose | grep -cE '^\[[0-9]/6\] (pass|nan|mismatch|unsupported|timeout) ')
  if [[ $n -eq 6 ]]; then echo "ok   --verbose: all 6 case lines"; else fail "--verbose: $n case lines, expected 6" "$(capture verbose)"; fi
else
  fail "the --verbose run did not end within 120 s" "$(capture verbose)"
fi

# Not a terminal: every case's line, no carriage return, no control sequence.
"$build/mpscheck" "${args[@]}" --report-dir "$work/pipe" 2>/dev/null | cat >"$work/pipe.txt"
n=$(grep -cE '^\[[0-9]/6\] (pass|nan|mismatch|unsupported|timeout) ' "$work/pipe.txt")
if [[ $n -eq 6 ]] && ! grep -q $'\r\|\x1b' "$work/pipe.txt"; then
  echo "ok   into a pipe: all 6 case lines, nothing redrawn"
else
  fail "into a pipe: $n case lines or a control character" "$(cat -A "$work/pipe.txt" | head -20)"
fi

[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; exit 1; }
echo "the console shows the progress line and the findings in a terminal"
