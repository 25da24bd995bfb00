#!/usr/bin/env python3
"""Drafts an expectations file from a report: one line per finding, its reason taken from the
finding's own message, keyed to the target and the LibTorch major.minor the report was made with.

    scripts/expectations-from-report.py mpscheck-report/report.json > expectations/NAME.expect

Review every line before committing it: a listed finding no longer fails a run.
"""
import json
import re
import sys


def reason(case):
    msg = " ".join(case.get("message", "").split())
    status = case["status"]
    kernel = re.search(r'"?([\w:]+)"? not implemented for \'(\w+)\'', msg)
    if status == "unsupported" and kernel:
        return f"no CPU {kernel.group(2)} kernel for {kernel.group(1)}"
    if status == "unsupported":
        return "unsupported: " + msg[:120]
    where = re.match(r"([^:]+): (\d+ of \d+) elements", msg)
    rmse = re.search(r"target's RMSE is (\S+), float32's (\S+):", msg)
    if case.get("attribution") == "target" and where and rmse:
        return (f"{where.group(1)}: {where.group(2)} elements off; against float64 the {case.get('dtype', '')} "
                f"kernel's RMSE is {rmse.group(1)}, float32's {rmse.group(2).rstrip(',;')}")
    return f"{status}: {msg[:140]}"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: expectations-from-report.py REPORT.json")
    with open(sys.argv[1]) as f:
        report = json.load(f)
    env = report.get("environment", {})
    version = env.get("torch_version", "")
    major, minor = (version.split(".") + ["0", "0"])[:2]
    target = env.get("target", "")
    findings = [c for c in report["cases"] if c["status"] not in ("pass", "skip")]
    print(f"# Known findings of --target {target} on LibTorch {major}.{minor} ({env.get('torch_build', '')}).")
    print(f"# Drafted from a report by scripts/expectations-from-report.py, then reviewed; {len(findings)} lines.")
    for c in sorted(findings, key=lambda c: c["id"]):
        key = f"target={target.split(':')[0]}  torch>={major}.{minor}  torch<{major}.{int(minor) + 1}"
        print(f"^{re.escape(c['id'])}$  {c['status']}  {key}  # {reason(c)}")


if __name__ == "__main__":
    main()
