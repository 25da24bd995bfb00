#!/usr/bin/env python3
"""Reports which of PyTorch's OpInfo entries mpscheck's cases cover, as a generated markdown page.

    scripts/opinfo-coverage.py --export OUT.pt --list LIST.txt [--write PAGE.md | --check PAGE.md]
                               [--min-percent 90]

OUT.pt is what scripts/export-opinfo.py wrote (build/plugins/opinfo-calls.pt); LIST.txt is the
output of `mpscheck --list` (lines "<case id>  [tags]", maybe a last line "N cases"). Without
--write or --check the page goes to stdout.

For each OpInfo entry of the export the page says whether it is covered:
  catalog        a hand-written op case op/<family>/<name>/... has a <name> the entry matches by
                 the rule below (CATALOG_RULE, also printed on the page);
  opinfo replay  the list has an op/opinfo/<entry>/... case, or a listed op/opinfo case replays an
                 export record whose "also" names the entry (its call was deduplicated into that
                 record); a record is listed when a case has its OpInfo name, sample, direction
                 and ATen op name (either id layout: .../s<k>/<direction>/<op> or
                 .../s<k>-<op>[.overload][-i]/<direction>);
  not covered    with the reason the export gives (skipped, samples failed, calls dropped, or
                 recorded but not in the list).
and whether MPS has a kernel for it, from the UNIMPLEMENTED_XFAILLIST dict (and
UNIMPLEMENTED_XFAILLIST_SPARSE) of the installed torch's torch/testing/_internal/common_mps.py,
read with ast (the dicts sit in a function defined only when MPS is available): a key whose value
is None has no kernel; a key with a dtype list is unimplemented for those dtypes only (still a
kernel). An entry's key is op.name + op.variant_test_name, as common_mps.py builds it; the full
dotted name is also tried.

--write PAGE.md   writes the page and prints the summary line.
--check PAGE.md   regenerates the page in memory; fails with one line when PAGE.md differs (giving
                  the command that rewrites it) or when the covered share of the entries with an
                  MPS kernel is below --min-percent (default 90); else prints the summary line.

Exit 0: ok; 1: the check failed; 2: usage or input error (one line on stderr).
"""

import argparse
import ast
import os
import re
import shlex
import sys
from collections import Counter, defaultdict

PROG = "opinfo-coverage.py"
REGENERATE = ("build/mpscheck --list > /tmp/mpscheck-list.txt && scripts/opinfo-coverage.py "
              "--export build/plugins/opinfo-calls.pt --list /tmp/mpscheck-list.txt "
              "--write docs/opinfo-coverage.md")

# Namespaces whose ops the catalog names without the namespace (nn.functional.gelu -> gelu).
NAMESPACES = ("nn.functional.", "linalg.", "special.", "fft.")

# Catalog names (or name prefixes) that spell an OpInfo entry differently than the rule derives.
ALIASES = {
    "sdpa": ["nn.functional.scaled_dot_product_attention"],
    "mha": ["nn.functional.multi_head_attention_forward"],
    "bce_with_logits": ["nn.functional.binary_cross_entropy_with_logits"],
    "upsample_nearest2d": ["nn.functional.interpolate.nearest", "nn.functional.upsample_nearest"],
    "upsample_linear1d": ["nn.functional.interpolate.linear"],
    "upsample_bilinear2d": ["nn.functional.interpolate.bilinear", "nn.functional.upsample_bilinear"],
    "downsample_bilinear2d": ["nn.functional.interpolate.bilinear"],
    "upsample_bicubic2d": ["nn.functional.interpolate.bicubic"],
    "bitwise_shift_left": ["bitwise_left_shift"],
    "index_tensor": ["__getitem__"],
    "to_float32": ["to", "float"], "to_float16": ["to", "half"], "to_bfloat16": ["to", "bfloat16"],
    "to_int64": ["to", "long"], "to_int32": ["to", "int"], "to_int16": ["to", "short"],
    "to_int8": ["to", "char"], "to_uint8": ["to", "byte"], "to_bool": ["to", "bool"],
}

# Spellings matched only exactly, never as a prefix: the dtype conversion methods, whose names
# start catalog names of other things (bool_mask_index is no Tensor.bool).
EXACT_ONLY = {"bool", "byte", "char", "short", "int", "long", "half", "float", "double", "bfloat16",
              "cfloat", "cdouble", "chalf"}

CATALOG_RULE = """\
A catalog case `op/<family>/<name>/...` covers an OpInfo entry when `<name>`, with a trailing `_`
stripped, is one of the entry's spellings, or else starts with `<spelling>_` for the longest
spelling of any entry that it starts with (so `layer_norm_eps12` is `layer_norm`, `max_pool2d` is
not `max`, `pad_constant_negative` is `nn.functional.pad.constant`); the dtype conversion methods
(`bool`, `int`, `half`, `bfloat16`, ...) are matched exactly only, never as a prefix. An entry's
spellings, each with a trailing `_` stripped:

- its `op.name` and its `aten_name`, and `op.name` with dots as underscores (`linalg.svd` ->
  `linalg_svd`, `fft.fft` -> `fft_fft`, `special.entr` -> `special_entr`);
- `op.name` without a leading `nn.functional.`, `linalg.`, `special.` or `fft.`
  (`nn.functional.gelu` -> `gelu`, `linalg.det` -> `det`, `fft.rfft2` -> `rfft2`), except that
  `nn.functional.X` is not spelled `X` when `X` is another entry's `op.name` (`unfold`: the
  catalog's Tensor.unfold is not `nn.functional.unfold`, im2col);
- each of those without a trailing `_loss` (`nn.functional.mse_loss` -> `mse`);
- each of those followed by `_<variant_test_name>` (`nn.functional.pad.constant` ->
  `pad_constant`, `scatter_reduce.sum` -> `scatter_reduce_sum`), `-` read as `_`;
- the aliases below, for names the catalog spells its own way.

A name that matches a spelling several entries share (`max` for `max.binary`,
`max.reduction_with_dim`, `max.reduction_no_dim`) covers all of them."""

DROP_WORDS = {
    "view": "only views",
    "not compute": "not compute (copies, factories)",
    "no floating-point tensor": "no floating-point tensor (integer/bool op)",
    "complex": "complex",
    "returns no tensor": "returns no tensor",
    "not a dense tensor": "sparse, quantized or nested tensors",
}


class InputError(Exception):
    """Bad input: the message is the one line printed before exit 2."""


# ---------------------------------------------------------------------------------------------
# Reading the inputs


def read_export(path):
    """The export's dictionary, as torch.load(weights_only=True) reads it."""
    import torch  # imported here so that --help works without torch

    if not os.path.isfile(path):
        raise InputError("--export %s: no such file" % path)
    try:
        data = torch.load(path, weights_only=True)
    except Exception as e:
        raise InputError("--export %s: not a file scripts/export-opinfo.py wrote (torch.load(weights_only=True) "
                         "fails: %s)" % (path, type(e).__name__))
    if not isinstance(data, dict) or data.get("format") != 1 or "entries" not in data or "calls" not in data:
        raise InputError("--export %s: not an export of format 1 (scripts/export-opinfo.py)" % path)
    return data


def read_list(path):
    """The case ids of an `mpscheck --list` output."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise InputError("--list %s: %s" % (path, e.strerror or e))
    except UnicodeDecodeError:
        raise InputError("--list %s: not text (is it the output of `mpscheck --list`?)" % path)
    ids = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or re.fullmatch(r"\d+ cases?", line):
            continue
        case = line.split()[0]
        if "/" not in case:
            raise InputError("--list %s:%d: not a case line of `mpscheck --list`: %s" % (path, n, line[:80]))
        ids.append(case)
    if not ids:
        raise InputError("--list %s: no cases (is it the output of `mpscheck --list`?)" % path)
    return ids


def mps_source():
    """The installed torch's common_mps.py and torch's version."""
    import torch

    return os.path.join(os.path.dirname(torch.__file__), "testing", "_internal", "common_mps.py"), torch


def dtype_names(node, torch):
    """The dtypes a dict value lists, by canonical name (torch.double -> float64)."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "torch":
            dtype = getattr(torch, sub.attr, None)
            names.add(str(dtype).replace("torch.", "") if isinstance(dtype, torch.dtype) else sub.attr)
    return names


def read_mps_unimplemented():
    """{key: None (no MPS kernel) or set of dtype names unimplemented} from common_mps.py."""
    path, torch = mps_source()
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError) as e:
        raise InputError("cannot read %s: %s" % (path, e))
    wanted = ("UNIMPLEMENTED_XFAILLIST", "UNIMPLEMENTED_XFAILLIST_SPARSE")
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id in wanted and isinstance(value, ast.Dict):
                found.setdefault(target.id, []).append(value)
    if "UNIMPLEMENTED_XFAILLIST" not in found:
        raise InputError("%s has no UNIMPLEMENTED_XFAILLIST dict literal" % path)
    table = {}
    for name in wanted:
        for literal in found.get(name, []):
            for key, value in zip(literal.keys, literal.values):
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    continue  # a **spread: not a literal key
                if isinstance(value, ast.Constant) and value.value is None:
                    table[key.value] = None
                elif table.get(key.value, set()) is not None:
                    table[key.value] = table.get(key.value, set()) | dtype_names(value, torch)
    return table, str(torch.__version__)


# ---------------------------------------------------------------------------------------------
# Matching


def split_name(entry):
    """(op.name, variant_test_name) of an entry (an export without them: the full name, no variant)."""
    if "op_name" in entry:
        return entry["op_name"], entry.get("variant_test_name", "")
    return entry["name"], ""


def spellings(entry, op_names):
    """The names the catalog may give an entry (see CATALOG_RULE); op_names: all entries' op.name."""
    op_name, variant = split_name(entry)
    bases = {op_name, entry.get("aten_name") or op_name, op_name.replace(".", "_")}
    for ns in NAMESPACES:
        if op_name.startswith(ns):
            bare = op_name[len(ns):]
            if not (ns == "nn.functional." and bare in op_names):
                bases.add(bare)
    bases |= {b[:-len("_loss")] for b in bases if b.endswith("_loss")}
    names = set(bases)
    if variant:
        names |= {b + "_" + variant.replace("-", "_") for b in bases}
    return {n.rstrip("_") for n in names if n.rstrip("_")}


def catalog_matches(entries, catalog_names):
    """{entry name: sorted catalog names that cover it}."""
    pool = defaultdict(set)  # spelling -> entry names
    op_names = {split_name(e)[0] for e in entries}
    for e in entries:
        for s in spellings(e, op_names):
            pool[s].add(e["name"])
    known = {e["name"] for e in entries}
    for alias, targets in ALIASES.items():
        pool[alias] |= {t for t in targets if t in known}
    by_length = sorted((s for s in pool if s not in EXACT_ONLY), key=lambda s: (-len(s), s))
    covered = defaultdict(set)
    for name in catalog_names:
        bare = name.rstrip("_")
        hit = bare if bare in pool else next((s for s in by_length if bare.startswith(s + "_")), None)
        for entry in pool.get(hit, ()):
            covered[entry].add(name)
    return {k: sorted(v) for k, v in covered.items()}


def opinfo_case_key(parts):
    """(OpInfo name, sample, direction, ATen op base name) of an op/opinfo case id's parts, or None."""
    name, rest = parts[2], parts[3:]
    sample = direction = op = None
    for i, part in enumerate(rest):
        m = re.fullmatch(r"s(\d+)(?:-(.+))?", part)
        if m and sample is None:
            sample, op = int(m.group(1)), m.group(2) or op
        elif part in ("forward", "backward"):
            direction = part
            if i + 1 < len(rest) and op is None:
                op = rest[i + 1]
    if sample is None or direction is None or not op:
        return None
    op = re.sub(r"-\d+$", "", op).split(".")[0]
    return name, sample, direction, op


def short_op(op):
    return op[len("aten::"):] if op.startswith("aten::") else op


def mps_status(entry, table):
    """("yes" | "no" | "unimplemented: dtypes", has a kernel)."""
    op_name, variant = split_name(entry)
    for key in (op_name + variant, entry["name"]):
        if key in table:
            if table[key] is None:
                return "no", False
            if table[key]:
                return "unimplemented: " + ", ".join(sorted(table[key])), True
    return "yes", True


def not_covered_reason(entry, has_records):
    """Why an entry has no case, from what the export recorded for it."""
    if entry["skipped"]:
        dtypes = entry.get("dtypes_cpu", [])
        integral = all(d == "bool" or d.startswith(("int", "uint")) for d in dtypes)
        return "skipped: %s (%s)" % (entry["skipped"], "integer/bool op" if integral else "other dtypes only")
    if has_records:
        return "recorded, but no op/opinfo case in the list"
    failed = entry.get("failed_samples", {})
    dropped = entry.get("dropped", {})
    if not dropped and failed:
        return "every sample failed: " + ", ".join(sorted(failed))
    if not dropped:
        return "no sample inputs" if entry["samples"] == 0 else "no ATen call"
    return "every call dropped: " + " + ".join(sorted(DROP_WORDS.get(r, r) for r in dropped))


# ---------------------------------------------------------------------------------------------
# The page


def analyse(export, case_ids, table):
    """One row per entry: dict(name, op_name, mps, kernel, coverage, detail, reason)."""
    entries = export["entries"]
    catalog_names, opinfo_cases, listed = set(), Counter(), set()
    for case in case_ids:
        parts = case.split("/")
        if parts[0] != "op" or len(parts) < 3:
            continue
        if parts[1] == "opinfo":
            opinfo_cases[parts[2]] += 1
            key = opinfo_case_key(parts)
            if key:
                listed.add(key)
        else:
            catalog_names.add(parts[2])
    catalog = catalog_matches(entries, catalog_names)
    via = defaultdict(set)      # entry -> entries whose listed records it was deduplicated into
    recorded = set()            # entries with a record of their own or in some record's also
    for c in export["calls"]:
        names = {c["opinfo"]} | {a.rsplit("/s", 1)[0] for a in c["also"]}
        recorded |= names
        if (c["opinfo"], c["sample"], c["direction"], short_op(c["op"])) in listed:
            for n in names:
                via[n].add(c["opinfo"])
    rows = []
    for e in entries:
        name = e["name"]
        mps, kernel = mps_status(e, table)
        cat = catalog.get(name, [])
        own = opinfo_cases.get(name, 0)
        replay = own > 0 or bool(via.get(name))
        coverage = {(True, True): "catalog + opinfo replay", (True, False): "catalog",
                    (False, True): "opinfo replay", (False, False): "not covered"}[(bool(cat), replay)]
        details, reason = [], ""
        if cat:
            shown = ", ".join("`%s`" % n for n in cat[:3])
            details.append("catalog " + shown + (" (+%d)" % (len(cat) - 3) if len(cat) > 3 else ""))
        if own:
            details.append("%d opinfo case%s" % (own, "" if own == 1 else "s"))
        elif replay:
            others = sorted(via[name] - {name})
            details.append("replayed in the cases of " + ", ".join("`%s`" % n for n in others[:2])
                           + (" (+%d)" % (len(others) - 2) if len(others) > 2 else ""))
        if not cat and not replay:
            reason = not_covered_reason(e, name in recorded)
            details.append(reason)
        rows.append({"name": name, "op_name": split_name(e)[0], "mps": mps, "kernel": kernel,
                     "coverage": coverage, "detail": "; ".join(details), "reason": reason})
    rows.sort(key=lambda r: r["name"])
    return rows


def summary(rows):
    """The numbers of the page's summary, and its one-line form."""
    count = Counter(r["coverage"] for r in rows)
    with_kernel = [r for r in rows if r["kernel"]]
    covered_kernel = sum(1 for r in with_kernel if r["coverage"] != "not covered")
    percent = 100.0 * covered_kernel / len(with_kernel) if with_kernel else 100.0
    names = defaultdict(bool)
    for r in rows:
        names[r["op_name"]] |= r["coverage"] != "not covered"
    s = {"entries": len(rows), "catalog": count["catalog"], "opinfo": count["opinfo replay"],
         "both": count["catalog + opinfo replay"], "not": count["not covered"],
         "kernel": len(with_kernel), "covered_kernel": covered_kernel, "percent": percent,
         "names": len(names), "names_covered": sum(names.values())}
    line = ("%(entries)d OpInfo entries: %(catalog)d catalog, %(opinfo)d opinfo replay, %(both)d both, "
            "%(not)d not covered; %(covered_kernel)d of %(kernel)d with an MPS kernel covered (%(percent).1f%%); "
            "%(names_covered)d of %(names)d op names" % s)
    return s, line


def render(export, rows, mps_torch):
    s, _ = summary(rows)
    out = ["Generated by `scripts/opinfo-coverage.py`; do not edit. Regenerate: `%s`" % REGENERATE, ""]
    out += ["# OpInfo coverage", ""]
    out += ["Which of PyTorch's OpInfo entries (`torch.testing._internal.common_methods_invocations.op_db`, "
            "torch %s, %d samples per entry exported by `scripts/export-opinfo.py`) mpscheck's cases cover: "
            "the hand-written catalog (`op/<family>/<name>/...`) or the OpInfo replay "
            "(`op/opinfo/<entry>/...`)." % (export.get("torch", "?"), export.get("max_samples", 0)), ""]
    out += ["## Summary", ""]
    out += ["| | entries |", "|---|---:|",
            "| OpInfo entries | %d |" % s["entries"],
            "| covered by the catalog only | %d |" % s["catalog"],
            "| covered by the opinfo replay only | %d |" % s["opinfo"],
            "| covered by both | %d |" % s["both"],
            "| not covered | %d |" % s["not"],
            "| with an MPS kernel | %d |" % s["kernel"],
            "| with an MPS kernel, covered | %d (%.1f%%) |" % (s["covered_kernel"], s["percent"]),
            "| op names (`op.name`) with a covered entry | %d of %d |" % (s["names_covered"], s["names"]), ""]
    reasons = Counter(r["reason"] for r in rows if r["reason"])
    if reasons:
        out += ["Not covered, by reason:", "", "| reason | entries |", "|---|---:|"]
        out += ["| %s | %d |" % (reason, n) for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))]
        out += [""]
    out += ["## How coverage is decided", "", CATALOG_RULE, "", "Aliases:", ""]
    out += ["- `%s` -> %s" % (a, ", ".join("`%s`" % t for t in ts)) for a, ts in sorted(ALIASES.items())]
    out += ["",
            "An entry is covered by the opinfo replay when the list has an `op/opinfo/<entry>/...` case, or a "
            "listed `op/opinfo` case replays an export record that the entry's own call was deduplicated "
            "into (the record's `also` names the entry).", "",
            "MPS kernel: read statically (with `ast`) from the `UNIMPLEMENTED_XFAILLIST` and "
            "`UNIMPLEMENTED_XFAILLIST_SPARSE` dict literals of `torch/testing/_internal/common_mps.py` in "
            "torch %s, which are defined only on a machine with MPS. An entry's key is `op.name` + "
            "`op.variant_test_name` (as `common_mps.py` builds it) or its dotted full name; a key whose value "
            "is `None` means no MPS kernel (\"no\"), a key with dtypes means those dtypes are unimplemented "
            "and the entry still counts as having a kernel. The covered percentage counts the entries with "
            "a kernel." % mps_torch, ""]
    out += ["## Entries", "", "| OpInfo entry | MPS kernel | coverage | detail |", "|---|---|---|---|"]
    out += ["| `%s` | %s | %s | %s |" % (r["name"], r["mps"], r["coverage"], r["detail"]) for r in rows]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    """argparse with one error line (and exit 2) instead of the usage text."""

    def error(self, message):
        print("%s: %s" % (PROG, message), file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    parser = Parser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--export", required=True, metavar="OUT.pt", help="what scripts/export-opinfo.py wrote")
    parser.add_argument("--list", required=True, metavar="LIST.txt", help="the output of `mpscheck --list`")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", metavar="PAGE.md", help="write the page")
    mode.add_argument("--check", metavar="PAGE.md", help="fail when the page is stale or coverage is low")
    parser.add_argument("--min-percent", type=float, default=90.0, metavar="P",
                        help="--check: least covered share of the entries with an MPS kernel (default 90)")
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    try:
        case_ids = read_list(args.list)
        export = read_export(args.export)
        table, mps_torch = read_mps_unimplemented()
    except InputError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    rows = analyse(export, case_ids, table)
    page = render(export, rows, mps_torch)
    s, line = summary(rows)
    if args.write:
        try:
            with open(args.write, "w", encoding="utf-8") as f:
                f.write(page)
        except OSError as e:
            print("%s: cannot write %s: %s" % (PROG, args.write, e.strerror or e), file=sys.stderr)
            return 2
        print(line)
        return 0
    if args.check:
        rewrite = "scripts/opinfo-coverage.py --export %s --list %s --write %s" % (
            shlex.quote(args.export), shlex.quote(args.list), shlex.quote(args.check))
        try:
            with open(args.check, encoding="utf-8") as f:
                current = f.read()
        except OSError:
            current = None
        if current != page:
            state = "missing" if current is None else "out of date"
            print("%s: %s is %s; rewrite it with: %s" % (PROG, args.check, state, rewrite), file=sys.stderr)
            return 1
        if s["percent"] < args.min_percent:
            print("%s: %.1f%% of the %d OpInfo entries with an MPS kernel are covered, below --min-percent %g"
                  % (PROG, s["percent"], s["kernel"], args.min_percent), file=sys.stderr)
            return 1
        print(line)
        return 0
    sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
