#!/usr/bin/env python3
"""Fails when a source file includes from a layer above its own (CONTRIBUTING.md, "Layers").

    util/  <-  include/mpscheck/ (the SDK)  <-  checks/  <-  reports/  <-  core/
                                   ^
                                plugins/

A file may include from its own layer and from the layers to its left. Inside core/, the same rule
holds between its sub-layers (CORE_TIERS below, lowest first):

    base  <-  workloads  <-  execution  <-  commands

Two exceptions to plain
rank: the SDK is installed and util/ is not, so the SDK may not include util/; and a plugin sees
the SDK alone (and files in its own plugins/ folder tree), never the host. The SDK's headers may
name no third-party header but LibTorch's and Boost's, the two its installed target provides.

Reads every `#include "..."` (and `#include <...>` naming mpscheck/ or a folder of the tree) in
include/ util/ checks/ reports/ core/ plugins/. A quoted include is resolved the way the build
resolves it: against the including file's folder first, then the tree's root and include/.

    scripts/check-layers.py [ROOT]            check; on failure one line per include, file:line: rule
    scripts/check-layers.py --graph [ROOT]    also print how many includes go from each layer to each

Python 3 standard library only. Exit 0: every include points down; 1: at least one does not;
2: usage error or an include that resolves to no file.
"""

import fnmatch
import os
import re
import sys

# Layer names as they appear in messages, lowest first.
ORDER = ["util", "sdk", "checks", "reports", "core", "plugins"]
FOLDER = {"util": "util/", "sdk": "include/mpscheck/", "checks": "checks/", "reports": "reports/",
          "core": "core/", "plugins": "plugins/"}
# What each layer may include (besides the system and third-party headers).
ALLOWED = {
    "util": {"util"},
    "sdk": {"sdk"},  # installed: util/ is not, so the SDK cannot use it
    "checks": {"util", "sdk", "checks"},
    "reports": {"util", "sdk", "checks", "reports"},
    "core": {"util", "sdk", "checks", "reports", "core"},
    "plugins": {"sdk", "plugins"},  # a plugin sees the SDK alone
}
RULE = {
    "util": "util/ is the ground floor: it includes only util/ (no mpscheck headers at all)",
    "sdk": "the SDK (include/mpscheck/) is installed and includes only the SDK",
    "checks": "checks/ includes only util/, the SDK and checks/",
    "reports": "reports/ includes only util/, the SDK, checks/ and reports/",
    "core": "core/ includes only util/, the SDK, checks/, reports/ and core/",
    "plugins": "a plugin includes only the SDK (<mpscheck/...>) and files in plugins/",
}
# core/'s sub-layers, lowest first, each a list of file-name patterns (a file's name without its
# folder; `execute*` also covers the files a split of execute.cpp makes). Derived from the include
# graph (`--graph` prints it); a core/ file matching no pattern is an error, so a new file is placed
# on purpose. A file includes only from its own sub-layer and those below it.
CORE_TIERS = [
    # The host's vocabulary and its files: the platform, targets, plugins and the case registry,
    # configuration and the command line, the environment, the journal, expectations, references.
    ("base", ["platform.*", "target.*", "host_text.*", "elf_deps.*", "plugin_host.*", "registry.*", "user_regex.*",
              "device_tier.*", "device_memory.*", "memory_cap.*", "environment.*", "journal.*", "run_plan.*", "input_spec.*",
              "reference_cache.*", "case_variant*", "config.*", "cli.*", "workflow*", "layer_repro.*",
              "worker_protocol.*", "op_record.*"]),
    # Cases from outside a plugin's catalog: TorchScript and .pt2 models, and the catalog that loads
    # plugins and models together.
    ("workloads", ["torchscript_workload.*", "pt2_workload.*", "case_catalog.*", "op_call_workload.*",
                   "op_call_script.*", "opinfo_cases.*"]),
    # Running cases: one case's two sides run and handed to checks/ (execute), the worker process and
    # its probe, the run loop over many, and explore's variants.
    ("execution", ["execute*", "case_steps.*", "probe.*", "worker.*", "run_loop*", "explore*",
                   "state_probe.*", "op_replay.*"]),
    # The program: a run's steps and outputs, the subcommands, main.
    ("commands", ["report_outputs.*", "run_setup.*", "commands.*", "app.*", "main.*"]),
]
CORE_TIER_NAMES = [name for name, _ in CORE_TIERS]
CORE_RULE = ("inside core/ a file includes only its own sub-layer and those below: "
             + " <- ".join(CORE_TIER_NAMES) + " (scripts/check-layers.py, CORE_TIERS)")

SCANNED = ["include", "util", "checks", "reports", "core", "plugins"]
EXTENSIONS = (".cpp", ".cc", ".hpp", ".h", ".inc", ".ipp")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
# What the installed SDK target (mpscheck::sdk: LibTorch and Boost's headers) lets a header include
# besides the SDK itself; a name without a folder is the standard or the C library's.
SDK_PROVIDES = ("ATen/", "c10/", "torch/", "boost/")
SDK_PROVIDES_RULE = ("the installed SDK target provides LibTorch, Boost's headers and the standard library only "
                     "(cmake/mpscheckConfig.cmake.in)")


def layer_of(rel):
    """The layer of a path relative to the root, or None for a file outside the layers."""
    rel = rel.replace(os.sep, "/")
    for name in ORDER:
        if rel.startswith(FOLDER[name]):
            return name
    return None


def core_tier(rel):
    """The index in CORE_TIERS of a core/ file, or None when no pattern matches it."""
    name = rel.replace(os.sep, "/").rsplit("/", 1)[-1]
    for index, (_, patterns) in enumerate(CORE_TIERS):
        if any(fnmatch.fnmatch(name, p) for p in patterns):
            return index
    return None


def resolve(root, including_rel, kind, target):
    """(layer, path relative to root) of an include, (None, None) for a header from elsewhere,
    or ("?", target) for a quoted include that names no file in the tree."""
    if kind == "<":
        # Angle brackets: the SDK, or a folder of the tree spelt with the wrong brackets.
        if target.startswith("mpscheck/"):
            return "sdk", "include/" + target
        first = target.split("/", 1)[0] + "/"
        if first in ("util/", "checks/", "reports/", "core/", "plugins/"):
            return layer_of(target), target
        return None, None
    candidates = [os.path.join(os.path.dirname(including_rel), target), target, os.path.join("include", target)]
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, c)):
            return layer_of(c), c.replace(os.sep, "/")
    return "?", target


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    flags = [a for a in argv if a.startswith("--")]
    if any(f not in ("--graph",) for f in flags) or len(args) > 1:
        print(__doc__.strip().split("\n\n")[2], file=sys.stderr)
        return 2
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if not os.path.isdir(os.path.join(root, "include", "mpscheck")):
        print(f"check-layers: {root} is not an mpscheck tree (no include/mpscheck/)", file=sys.stderr)
        return 2

    problems, unresolved = [], []
    counts = {}  # (from layer, to layer) -> includes
    core_counts = {}  # (from core tier, to core tier) -> includes
    files = 0
    for top in SCANNED:
        for folder, dirs, names in os.walk(os.path.join(root, top)):
            dirs.sort()
            for name in sorted(names):
                if not name.endswith(EXTENSIONS):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                own = layer_of(rel)
                if own is None:
                    continue
                files += 1
                own_tier = core_tier(rel) if own == "core" else None
                if own == "core" and own_tier is None:
                    problems.append(f"{rel}:1: core/{name} is in no sub-layer of core/: add it to CORE_TIERS "
                                    "in scripts/check-layers.py")
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        kind, target = m.group(1), m.group(2).strip()
                        to, to_rel = resolve(root, rel, kind, target)
                        if to is None:
                            if own == "sdk" and "/" in target and not target.startswith(SDK_PROVIDES):
                                problems.append(f"{rel}:{number}: includes <{target}>: {SDK_PROVIDES_RULE}")
                            continue
                        if to == "?":
                            unresolved.append(f"{rel}:{number}: #include \"{target}\" names no file in the tree")
                            continue
                        counts[(own, to)] = counts.get((own, to), 0) + 1
                        if to not in ALLOWED[own]:
                            problems.append(f"{rel}:{number}: includes {to_rel} ({FOLDER[to]}): {RULE[own]}")
                        elif own == "core" and to == "core" and own_tier is not None:
                            to_tier = core_tier(to_rel)
                            if to_tier is None:
                                continue  # reported as a file of its own
                            core_counts[(own_tier, to_tier)] = core_counts.get((own_tier, to_tier), 0) + 1
                            if to_tier > own_tier:
                                problems.append(f"{rel}:{number}: includes {to_rel} (core/ {CORE_TIER_NAMES[to_tier]}) "
                                                f"from core/ {CORE_TIER_NAMES[own_tier]}: {CORE_RULE}")

    if "--graph" in flags:
        width = max(len(n) for n in ORDER)
        print("includes from (row) to (column):")
        print(" " * (width + 2) + "  ".join(f"{n:>{width}}" for n in ORDER))
        for a in ORDER:
            cells = []
            for b in ORDER:
                n = counts.get((a, b), 0)
                mark = "" if n == 0 or b in ALLOWED[a] else "!"
                cells.append(f"{(str(n) + mark) if n else '.':>{width}}")
            print(f"{a:>{width}}  " + "  ".join(cells))
        width = max(len(n) for n in CORE_TIER_NAMES)
        print("inside core/, includes from (row) to (column):")
        print(" " * (width + 2) + "  ".join(f"{n:>{width}}" for n in CORE_TIER_NAMES))
        for a in range(len(CORE_TIERS)):
            cells = []
            for b in range(len(CORE_TIERS)):
                n = core_counts.get((a, b), 0)
                cells.append(f"{(str(n) + ('!' if b > a else '')) if n else '.':>{width}}")
            print(f"{CORE_TIER_NAMES[a]:>{width}}  " + "  ".join(cells))
    for line in unresolved:
        print(line)
    for line in problems:
        print(line)
    includes = sum(counts.values())
    if problems:
        print(f"check-layers: {len(problems)} include(s) break the layer rules; the direction is "
              "util <- SDK <- checks <- reports <- core, plugins see the SDK only, and inside core/ "
              + " <- ".join(CORE_TIER_NAMES) + " (CONTRIBUTING.md, Layers)")
        return 1
    if unresolved:
        print(f"check-layers: {len(unresolved)} include(s) name no file in the tree")
        return 2
    print(f"check-layers: {files} files, {includes} includes of the tree's own headers, every one points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
