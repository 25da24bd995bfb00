#!/usr/bin/env python3
"""Holds mpscheck's `unsupported` verdicts on the OpInfo cases against the dtypes OpInfo declares.

PyTorch's OpInfo database says, for every op, which dtypes its CPU kernels take
(`op.supported_dtypes("cpu")`, and `supported_backward_dtypes` for its gradient). mpscheck finds the
same thing its own way: it replays the op's recorded ATen calls in that dtype on the CPU and reads
what the kernel raises. The two are independent, so their agreement is an external check of the
replay (and of checks/errors.cpp's reading of "not implemented for 'Half'").

    scripts/opinfo-oracle.py --export build/plugins/opinfo-calls.pt --report DIR/report.json
        [--dtypes float16,bfloat16] [--min-agreement PERCENT] [--differences]

The report is a run over the OpInfo cases on a CPU target in which each float16/bfloat16 case runs in
its own dtype, e.g. `mpscheck --filter '^op/opinfo/' --target cpu --min-time 0 --report-dir DIR`.

For each OpInfo entry, dtype and direction that has cases in the report: mpscheck calls the dtype
unsupported when one of those cases is `unsupported`; OpInfo calls it unsupported when the dtype is
not declared. Entries the report has no case for are not counted (the coverage table says why they
have none). Prints the agreement and, with --differences, one line per disagreement with the case
mpscheck judged and its message.

Exit 0: the agreement is at least --min-agreement (default 0: report only); 1: below it; 2: usage or
an unreadable input. Needs torch (to read the export) and the standard library.
"""

import argparse
import collections
import json
import sys

SHORT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}


def fail(message):
    print(f"opinfo-oracle: {message}", file=sys.stderr)
    sys.exit(2)


def load_export(path):
    try:
        import torch
    except ImportError:
        fail("torch is not importable; run with the python3 that has the torch==2.13.0 wheel")
    try:
        data = torch.load(path, weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unreadable file is the same one line
        fail(f"{path} is not an OpInfo export ({type(e).__name__}: {e}); make it with scripts/export-opinfo.py")
    if not isinstance(data, dict) or data.get("format") != 1:
        fail(f"{path} is not an OpInfo export of format 1; make it with scripts/export-opinfo.py")
    return {e["name"]: e for e in data["entries"]}


def load_report(path):
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    return report.get("cases", [])


def parse_id(case_id):
    """(entry, dtype short, direction) of an op/opinfo id, or None."""
    parts = case_id.split("/")
    if len(parts) != 6 or parts[0] != "op" or parts[1] != "opinfo":
        return None
    return parts[2], parts[3], parts[5]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--export", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--dtypes", default="float16,bfloat16")
    ap.add_argument("--min-agreement", type=float, default=0.0)
    ap.add_argument("--differences", action="store_true")
    args = ap.parse_args()
    entries = load_export(args.export)
    dtypes = [d for d in args.dtypes.split(",") if d]
    for d in dtypes:
        if d not in SHORT:
            fail(f"--dtypes: {d} is not one of {', '.join(SHORT)}")
    wanted = {SHORT[d]: d for d in dtypes}

    # (entry, dtype, direction) -> cases judged there
    groups = collections.defaultdict(list)
    for c in load_report(args.report):
        parsed = parse_id(c.get("id", ""))
        if not parsed or parsed[1] not in wanted or parsed[0] not in entries:
            continue
        groups[(parsed[0], wanted[parsed[1]], parsed[2])].append(c)
    if not groups:
        fail(f"{args.report} has no op/opinfo case in {', '.join(dtypes)}; run mpscheck over them first")

    agree = 0
    differences = []
    by_kind = collections.Counter()
    for (name, dtype, direction), cases in sorted(groups.items()):
        entry = entries[name]
        declared = entry["backward_dtypes_cpu"] if direction == "backward" else entry["dtypes_cpu"]
        opinfo_supported = dtype in declared
        unsupported = [c for c in cases if c.get("status") == "unsupported"]
        judged = [c for c in cases if c.get("status") not in ("unsupported", "skip")]
        mpscheck_supported = not unsupported
        if opinfo_supported == mpscheck_supported:
            agree += 1
            continue
        kind = ("OpInfo declares it, the replay found it unsupported" if opinfo_supported
                else "OpInfo does not declare it, the replay ran it")
        by_kind[kind] += 1
        example = (unsupported or judged or cases)[0]
        differences.append((name, dtype, direction, kind, example))

    total = len(groups)
    percent = 100.0 * agree / total
    print(f"opinfo-oracle: {agree} of {total} (entry, dtype, direction) groups agree ({percent:.1f}%)"
          + "".join(f"; {n}: {k}" for k, n in sorted(by_kind.items())))
    if args.differences:
        for name, dtype, direction, kind, c in differences:
            message = (c.get("message") or "").splitlines()[0][:160] if c.get("message") else ""
            print(f"  {name} {dtype} {direction}: {kind}; {c['id']} {c.get('status')}: {message}")
    return 0 if percent >= args.min_agreement else 1


if __name__ == "__main__":
    sys.exit(main())
