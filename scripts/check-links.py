#!/usr/bin/env python3
"""Fails when a relative link or an anchor between the Markdown pages leads nowhere.

Reads README.md, ARCHITECTURE.md, CONTRIBUTING.md and docs/*.md. Every inline link `[text](target)`
and reference definition `[name]: target` outside code (fenced blocks and `code spans` are skipped)
whose target has no scheme (http:, https:, mailto: ... are left alone) must name a file or folder
inside the tree, and an anchor (`page.md#heading`, `#heading`) must be a heading of that page as
GitHub spells it: lower case, punctuation dropped, spaces as hyphens, a repeated heading suffixed
-1, -2, ... A link that climbs out of the tree is broken too: the pages stand alone.

    scripts/check-links.py [ROOT]     check; on failure one line per link, file:line: what

Python 3 standard library only. Exit 0: every link resolves; 1: at least one does not; 2: usage
error or a page missing.
"""

import os
import re
import sys

PAGES = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
PAGE_FOLDERS = ["docs"]

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def pages(root):
    found = [p for p in PAGES if os.path.isfile(os.path.join(root, p))]
    for folder in PAGE_FOLDERS:
        d = os.path.join(root, folder)
        if os.path.isdir(d):
            found += sorted(os.path.join(folder, n) for n in os.listdir(d) if n.endswith(".md"))
    return found


def prose_lines(text):
    """(line number, line) for every line outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading):
    """The anchor GitHub gives a heading's text."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading keeps its text
    text = re.sub(r"<[^>]+>", "", text)  # and an HTML tag none
    text = text.replace("*", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache):
    if path not in cache:
        seen = {}
        names = set()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for _, line in prose_lines(text):
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                names.add(base if n == 0 else f"{base}-{n}")
                seen[base] = n + 1
            names.update(HTML_ANCHOR.findall(line))
        cache[path] = names
    return cache[path]


def links(text):
    """(line number, target) for every link outside code."""
    for number, line in prose_lines(text):
        bare = CODE_SPAN.sub("", line)
        for m in INLINE_LINK.finditer(bare):
            yield number, m.group(1)
        m = REFERENCE.match(bare)
        if m:
            yield number, m.group(1)


def problem(root, page, target, cache):
    """Why `target`, linked from `page`, leads nowhere; None when it resolves."""
    if SCHEME.match(target) or target.startswith("//"):
        return None
    path_part, _, anchor = target.partition("#")
    here = os.path.dirname(os.path.join(root, page))
    dest = os.path.normpath(os.path.join(here, path_part)) if path_part else os.path.join(root, page)
    inside = os.path.relpath(dest, root)
    if inside == ".." or inside.startswith(".." + os.sep):
        return f"'{target}' points outside the tree ({inside})"
    if not os.path.exists(dest):
        return f"'{target}': there is no {inside}"
    if anchor:
        if not dest.endswith(".md") or not os.path.isfile(dest):
            return f"'{target}': an anchor into {inside}, which is not a Markdown page"
        if anchor not in anchors(dest, cache):
            return f"'{target}': {inside} has no heading whose anchor is #{anchor}"
    return None


def main(argv):
    if len(argv) > 1 or (argv and argv[0] in ("-h", "--help")):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = os.path.abspath(argv[0] if argv else os.path.join(os.path.dirname(__file__), ".."))
    if not os.path.isfile(os.path.join(root, "README.md")):
        print(f"check-links: {root} has no README.md; give the source tree's root", file=sys.stderr)
        return 2
    cache = {}
    broken = 0
    checked = 0
    for page in pages(root):
        with open(os.path.join(root, page), encoding="utf-8") as f:
            text = f.read()
        for number, target in links(text):
            checked += 1
            why = problem(root, page, target, cache)
            if why:
                print(f"{page}:{number}: broken link {why}")
                broken += 1
    if broken:
        print(f"check-links: {broken} of {checked} links lead nowhere; fix the target or the heading it names")
        return 1
    print(f"check-links: {checked} links in {len(pages(root))} pages resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
