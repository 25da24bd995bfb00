#!/usr/bin/env python3
"""Fails when a source file or a function is too long to read in one sitting (CONTRIBUTING.md, "Sizes").

    a non-test source file: at most 600 lines
    a function:             at most 100 lines, from the first line of its signature to its closing brace

Reads every .cpp/.cc/.hpp/.h/.inc/.ipp under include/ util/ checks/ reports/ core/ plugins/ bench/
examples/ (tests/ is not scanned). Functions are found by brace matching, a heuristic rather than a
C++ parser: comments, string, raw-string and character literals and preprocessor lines are blanked,
then a `{` at namespace or class scope whose declaration has a parameter list (and is no
`= {...}` initializer or brace inside parentheses) opens a function; everything up to its matching
`}` (lambdas, local classes) counts as that function's. A lambda assigned at namespace scope is not
measured.

    scripts/check-sizes.py [ROOT]          check; on failure one line per problem, file:line: what

Python 3 standard library only. Exit 0: nothing too long; 1: at least one file or function is;
2: usage error.
"""

import os
import re
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 100
SCANNED = ["include", "util", "checks", "reports", "core", "plugins", "bench", "examples"]
EXTENSIONS = (".cpp", ".cc", ".hpp", ".h", ".inc", ".ipp")

# Catalog registration functions only: a plugin's MPSCHECK_CATALOG body is a list of case
# declarations, one statement each, and reads as a table; splitting it would scatter the table.
# Each entry is (file, function name as the check prints it) with why it is long.
EXEMPT_FUNCTIONS = {
    ("plugins/ops/indexing/indexing.cpp", "MPSCHECK_CATALOG(indexing_cases)"),  # gather/scatter/index_* cases
    ("plugins/ops/linalg/linalg.cpp", "MPSCHECK_CATALOG(linalg_cases)"),        # matmul, decompositions, solves
    ("plugins/ops/random/random.cpp", "MPSCHECK_CATALOG(random_cases)"),        # one case per distribution
    ("plugins/ops/shape/shape.cpp", "MPSCHECK_CATALOG(shape_cases)"),           # views, cats, pads, permutes
    ("plugins/ops/sort/sort.cpp", "MPSCHECK_CATALOG(sort_cases)"),              # sort, topk, unique, search
}

# KNOWN, BEING SPLIT (temporary): files over the limit that another branch is splitting now.
# Remove an entry when the split is merged; the check says so when an entry is no longer needed.
KNOWN_BEING_SPLIT = set()  # none now: compare.cpp and execute.cpp were split
# KNOWN, BEING WORKED ON ELSEWHERE (temporary): functions over the limit in folders another branch
# owns now, so this branch may not edit them. Remove an entry when that branch merges and splits it.
KNOWN_LONG_FUNCTIONS: set = set()  # none now: run_planted is split by class group

RAW_STRING = re.compile(r'R"([^()\\ ]{0,16})\(')
CONTAINER = re.compile(r'(^|[^\w])(namespace|extern\s+"")(?![\w])')
CLASS = re.compile(r'^\s*(template\s*<.*>\s*)?(class|struct|union)\b')
ENUM = re.compile(r'(^|[^\w])enum(?![\w])')
NEXT_WORD = re.compile(r"[ \t]*([A-Za-z_]\w*)")
QUALIFIERS = {"const", "noexcept", "override", "final", "mutable", "requires", "try", "throw", "volatile"}
NAME = re.compile(r'((?:operator\s*(?:\(\)|[^\s(]+))|~?[A-Za-z_]\w*)\s*$')


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by spaces (newlines kept),
    so braces inside them do not count. String literals keep their quotes ("" stays)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n:
                if text[i] == "\n" and (i == 0 or text[i - 1] != "\\"):
                    break
                out.append("\n" if text[i] == "\n" else " ")
                i += 1
            continue
        line_start = False
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.extend("\n" if ch == "\n" else " " for ch in text[i:end])
            i = end
        elif c == "R" and RAW_STRING.match(text, i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = RAW_STRING.match(text, i)
            close = ")" + m.group(1) + '"'
            end = text.find(close, m.end())
            end = n if end < 0 else end + len(close)
            out.append('""')
            out.extend("\n" if ch == "\n" else " " for ch in text[i + 2:end])
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator, 1'000
                out.append(" ")
                i += 1
                continue
            out.append(c + c)
            out.extend(" " for _ in range(j - i - 1))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def top_level(header):
    """The header with everything inside (), [] and {} removed, to look for `=` and names."""
    depth, kept = 0, []
    for ch in header:
        if ch in "([{":
            depth += 1
            if depth == 1:
                kept.append(ch)
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                kept.append(ch)
        elif depth == 0:
            kept.append(ch)
    return "".join(kept)


def classify(header):
    """What a `{` opens at namespace or class scope: "container", "function" or "other"."""
    flat = " ".join(header.split())
    if CONTAINER.search(flat):
        return "container"
    if ENUM.search(flat):
        return "other"
    if CLASS.match(flat) and "(" not in top_level(flat).split(":")[0].replace("template", ""):
        return "container"
    outer = top_level(flat)
    stripped = re.sub(r"(==|!=|<=|>=|operator\s*\S*=)", "", outer)
    if "=" in stripped:
        return "other"  # an initializer, or a lambda assigned to a variable
    if "(" in outer:
        return "function"
    return "other"


def function_name(header):
    flat = " ".join(header.split())
    head = flat
    # The name stands before the parameter list: the first top-level "(" not after "operator".
    depth = 0
    for k, ch in enumerate(flat):
        if ch == "<":
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
        elif ch == "(" and depth == 0:
            if re.search(r"operator\s*$", flat[:k]) and flat[k:k + 2] == "()":
                continue
            head = flat[:k]
            break
    if re.match(r"^\s*MPSCHECK_CATALOG\s*$", head):  # a catalog: its name is the macro's argument
        arg = re.match(r"^\s*MPSCHECK_CATALOG\s*\(\s*(\w+)", flat)
        return f"MPSCHECK_CATALOG({arg.group(1) if arg else ''})"
    m = NAME.search(head)
    qual = re.search(r"((?:\w+\s*::\s*)*)" + re.escape(m.group(1)) + r"\s*$", head) if m else None
    return (qual.group(1).replace(" ", "") + m.group(1)) if m else head.strip()[-40:]


def past_block(code, i, line):
    """From just inside an open brace at i - 1: the index past its matching brace, and the line there."""
    depth = 1
    while i < len(code) and depth:
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
        elif code[i] == "\n":
            line += 1
        i += 1
    return i, line


def functions(text):
    """(name, first line, last line) of each function at namespace or class scope."""
    code = blank(text)
    found = []
    stack = []  # kinds of the open braces at namespace/class level: "container" or "other"
    header, header_line = [], None
    line = 1
    parens = 0
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == "\n":
            line += 1
            header.append(c)
            i += 1
            # A macro invoked without a semicolon (`MPSCHECK_PLUGIN(...)` before the next function):
            # a line ending in `)` followed by a line that starts a new declaration ends the header.
            if parens == 0 and "".join(header).rstrip().endswith(")"):
                m = NEXT_WORD.match(code, i)
                if m and m.group(1) not in QUALIFIERS:
                    header, header_line = [], None
            continue
        if c == "{" and parens == 0:
            kind = classify("".join(header))
            if kind == "function":
                start = header_line or line
                name = function_name("".join(header))
                j, end_line = past_block(code, i + 1, line)
                found.append((name, start, end_line))
                line = end_line
                i = j
                header, header_line = [], None
                continue
            if kind == "container":
                stack.append("container")
                header, header_line = [], None
                i += 1
                continue
            # An initializer or enum: skip to its matching brace, keeping it in the header.
            j, line = past_block(code, i + 1, line)
            header.append("{}")
            i = j
            continue
        if c == "}" and parens == 0:
            if stack:
                stack.pop()
            header, header_line = [], None
            i += 1
            continue
        if c == ";" and parens == 0:
            header, header_line = [], None
            i += 1
            continue
        if c == "(":
            parens += 1
        elif c == ")":
            parens = max(0, parens - 1)
        if header_line is None and not c.isspace():
            header_line = line
        header.append(c)
        i += 1
    return found


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    if len(args) > 1 or len(args) != len(argv):
        print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
        return 2
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if not os.path.isdir(os.path.join(root, "include", "mpscheck")):
        print(f"check-sizes: {root} is not an mpscheck tree (no include/mpscheck/)", file=sys.stderr)
        return 2
    problems, notes = [], []
    files = measured = 0
    exempt_used, split_used = set(), set()
    for top in SCANNED:
        for folder, dirs, names in os.walk(os.path.join(root, top)):
            dirs.sort()
            for name in sorted(names):
                if not name.endswith(EXTENSIONS):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                files += 1
                lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
                if rel in KNOWN_BEING_SPLIT:
                    split_used.add(rel)
                    long_functions = [f for f in functions(text) if f[2] - f[1] + 1 > MAX_FUNCTION_LINES]
                    if lines <= MAX_FILE_LINES and not long_functions:
                        notes.append(f"check-sizes: note: {rel} is listed as being split but is within the limits "
                                     "now; remove it from KNOWN_BEING_SPLIT")
                    continue
                if lines > MAX_FILE_LINES:
                    problems.append(f"{rel}:1: the file is {lines} lines (at most {MAX_FILE_LINES}); split it by concern")
                for fname, first, last in functions(text):
                    measured += 1
                    length = last - first + 1
                    if length <= MAX_FUNCTION_LINES:
                        continue
                    if (rel, fname) in EXEMPT_FUNCTIONS:
                        exempt_used.add((rel, fname))
                        continue
                    if (rel, fname) in KNOWN_LONG_FUNCTIONS:
                        split_used.add((rel, fname))
                        continue
                    problems.append(f"{rel}:{first}: function {fname} is {length} lines (at most "
                                    f"{MAX_FUNCTION_LINES}); split it into steps")
    for rel, fname in sorted(set(EXEMPT_FUNCTIONS) - exempt_used):
        notes.append(f"check-sizes: note: the exemption for {fname} in {rel} is no longer needed; remove it")
    for rel in sorted(KNOWN_BEING_SPLIT - split_used):
        notes.append(f"check-sizes: note: {rel} is listed as being split but is not in the tree; remove it")
    for rel, fname in sorted(KNOWN_LONG_FUNCTIONS - split_used):
        notes.append(f"check-sizes: note: {fname} in {rel} is listed as long but is not; remove the entry")
    for line in problems + notes:
        print(line)
    if problems:
        print(f"check-sizes: {len(problems)} file(s) or function(s) too long "
              f"(files {MAX_FILE_LINES} lines, functions {MAX_FUNCTION_LINES}; CONTRIBUTING.md, Sizes)")
        return 1
    print(f"check-sizes: {files} files, {measured} functions, none too long "
          f"({len(exempt_used)} catalog exemption(s), {len(split_used)} known and being split elsewhere)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
