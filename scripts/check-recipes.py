#!/usr/bin/env python3
"""Runs CONTRIBUTING.md's three recipes verbatim on a scratch copy of the tree (issue 27).

Takes every piece of code from CONTRIBUTING.md itself, so the page and this check cannot drift:

  Recipe 1, a new family: the family's folder is emptied and refilled with the page's two files
    (the `mpscheck_add_plugin(...)` line as its CMakeLists.txt, the ```cpp block as its source);
    then the page's ```diff (a case added to that family) is applied to it.
  Recipe 2, a model: the model file's MPSCHECK_CATALOG block is replaced by the page's.
  Recipe 3, a report format: the format's `NAME_reporter()` function is replaced by the page's, and
    the page's ```diff to reports/reporters.cpp is applied (its `+` lines taken out first where the
    tree already has them, so the diff's context must still match the file).

A diff is applied by its lines alone (context ` `, removed `-`, added `+`): the context and removed
lines must stand in the file, once, in that order. Then the scratch copy is configured and only the
host and the two plugins are built, in BUILD_DIR/recipe-check/src/build (laid out as the tree and its
build/ are, so under ccache's base_dir a file the recipes did not change can hit the tree's own
build's cache entries), and what the page promises is checked:

  `mpscheck --list --filter '^op/distance/'` lists the new case's four ids (float32, contiguous and
  transposed, forward and backward), and all four pass on cpu;
  `mpscheck --list --filter '^model/lenet5/'` lists its /infer and /train cases;
  `mpscheck --help` offers --csv, and a run with --csv writes one row per case.

    scripts/check-recipes.py SOURCE_DIR BUILD_DIR     (BUILD_DIR: a configured build, for its cache)

Python 3 standard library only. Exit 0: every recipe ran; 1: a recipe failed (named); 2: usage.
"""

import os
import re
import shutil
import subprocess
import sys
import time


class RecipeError(Exception):
    pass


def fenced_blocks(text, lang):
    return re.findall(r"```" + lang + r"\n(.*?)```", text, re.S)


def section(doc, title):
    m = re.search(r"^## " + re.escape(title) + r".*?(?=^## |\Z)", doc, re.S | re.M)
    if not m:
        raise RecipeError(f"CONTRIBUTING.md has no section '## {title}'")
    return m.group(0)


def one(pattern, text, what):
    m = re.search(pattern, text, re.S)
    if not m:
        raise RecipeError(f"CONTRIBUTING.md: cannot find {what}")
    return m.group(1)


def diff_sides(diff):
    """(old lines, new lines) of a diff given by its lines alone."""
    old, new = [], []
    for line in diff.rstrip("\n").split("\n"):
        mark, body = line[:1], line[1:]
        if mark == " ":
            old.append(body), new.append(body)
        elif mark == "-":
            old.append(body)
        elif mark == "+":
            new.append(body)
        else:
            raise RecipeError(f"a diff line starts with neither ' ', '-' nor '+': {line!r}")
    return old, new


def replace_block(text, old, new, path):
    old_text, new_text = "\n".join(old) + "\n", "\n".join(new) + "\n"
    count = text.count(old_text)
    if count != 1:
        raise RecipeError(f"{path}: the diff's context and removed lines stand {count} times in the file, "
                          f"not once:\n{old_text}")
    return text.replace(old_text, new_text)


def apply_diff(path, diff, undo_first=False):
    old, new = diff_sides(diff)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if undo_first and ("\n".join(new) + "\n") in text:
        text = replace_block(text, new, old, path)  # back to the file before the recipe
    with open(path, "w", encoding="utf-8") as f:
        f.write(replace_block(text, old, new, path))


def braced_block_span(text, start):
    """(start, end) of the block whose header begins at `start`, through its matching brace."""
    depth, i = 0, text.index("{", start)
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return start, i + 1
        i += 1
    raise RecipeError("unbalanced braces")


def replace_definition(path, head_pattern, replacement):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(head_pattern, text, re.M)
    if not m:
        raise RecipeError(f"{path}: no definition matching {head_pattern!r} to replace with the page's")
    a, b = braced_block_span(text, m.start())
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:a] + replacement.rstrip("\n") + text[b:])


def run(cmd, cwd=None, check=True):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and p.returncode != 0:
        raise RecipeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-4000:]}")
    return p


def cache_value(build, key):
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split("=", 1)[1].strip()
    return None


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
        return 2
    src, build = (os.path.abspath(a) for a in argv)
    if not os.path.isfile(os.path.join(src, "CONTRIBUTING.md")) or not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        print("check-recipes: give the source tree and a configured build folder", file=sys.stderr)
        return 2
    started = time.monotonic()
    with open(os.path.join(src, "CONTRIBUTING.md"), encoding="utf-8") as f:
        doc = f.read()
    scratch = os.path.join(build, "recipe-check")
    tree = os.path.join(scratch, "src")
    shutil.rmtree(scratch, ignore_errors=True)
    ignore_top = lambda d, names: [n for n in names if d == src and (n.startswith("build") or n == ".git")]
    shutil.copytree(src, tree, ignore=ignore_top, symlinks=True)

    # Recipe 1: the family's files, then the diff that adds a case to it.
    r1 = section(doc, "Recipe 1")
    folder = one(r"`(plugins/ops/\w+)/CMakeLists\.txt`", r1, "Recipe 1's family folder")
    plugin_line = one(r"holding the line `(mpscheck_add_plugin\([^`]*\))`", r1, "Recipe 1's mpscheck_add_plugin line")
    plugin_target = plugin_line.split("(", 1)[1].split()[0]
    source_name = plugin_line.rstrip(")").split()[-1]
    family_cpp = [b for b in fenced_blocks(r1, "cpp") if "MPSCHECK_CATALOG" in b]
    diffs = fenced_blocks(r1, "diff")
    if not family_cpp or not diffs:
        raise RecipeError("CONTRIBUTING.md: Recipe 1 needs a ```cpp block with MPSCHECK_CATALOG and a ```diff block")
    shutil.rmtree(os.path.join(tree, folder))
    os.makedirs(os.path.join(tree, folder))
    with open(os.path.join(tree, folder, "CMakeLists.txt"), "w") as f:
        f.write(plugin_line + "\n")
    with open(os.path.join(tree, folder, source_name), "w") as f:
        f.write(family_cpp[0])
    apply_diff(os.path.join(tree, folder, source_name), diffs[0])
    new_case = one(r'\+\s*\w+\.op\("(\w+)"', diffs[0], "the case Recipe 1's diff adds")
    family = folder.rsplit("/", 1)[-1]
    print(f"recipe 1: {folder}/ from the page ({plugin_line}), then its diff adding '{new_case}'")

    # Recipe 2: the model's registration.
    r2 = section(doc, "Recipe 2")
    model_stem = one(r"`(plugins/models/\w+/\w+)\.\{h,cpp\}`", r2, "Recipe 2's model file")
    registration = [b for b in fenced_blocks(r2, "cpp") if "MPSCHECK_CATALOG" in b]
    if not registration:
        raise RecipeError("CONTRIBUTING.md: Recipe 2 has no ```cpp block with MPSCHECK_CATALOG")
    catalog_name = one(r"MPSCHECK_CATALOG\((\w+)\)", registration[0], "Recipe 2's catalog name")
    model_name = one(r'image_classifier<[^>]*>\("(\w+)"', registration[0], "Recipe 2's model name")
    replace_definition(os.path.join(tree, model_stem + ".cpp"), r"^MPSCHECK_CATALOG\(" + catalog_name + r"\)",
                       registration[0])
    models_target = "models_" + model_stem.split("/")[2]
    print(f"recipe 2: {model_stem}.cpp's MPSCHECK_CATALOG({catalog_name}) from the page")

    # Recipe 3: the format's reporter function and its line in reports/reporters.cpp.
    r3 = section(doc, "Recipe 3")
    format_file = one(r"is\s+`(reports/\w+\.cpp)`", r3, "Recipe 3's format file")
    reporter_fn = [b for b in fenced_blocks(r3, "cpp") if "_reporter()" in b]
    reporter_diff = fenced_blocks(r3, "diff")
    if not reporter_fn or not reporter_diff:
        raise RecipeError("CONTRIBUTING.md: Recipe 3 needs a ```cpp block with NAME_reporter() and a ```diff block")
    fn_name = one(r"const Reporter& (\w+_reporter)\(\)", reporter_fn[0], "Recipe 3's reporter function")
    flag = one(r'\.flag = "(\w+)"', reporter_fn[0], "Recipe 3's flag")
    replace_definition(os.path.join(tree, format_file), r"^const Reporter& " + fn_name + r"\(\)", reporter_fn[0])
    apply_diff(os.path.join(tree, "reports", "reporters.cpp"), reporter_diff[0], undo_first=True)
    print(f"recipe 3: {format_file}'s {fn_name}() and the reports/reporters.cpp diff from the page")

    # Configure and build only what the recipes need.
    # The build folder sits inside the copy as build/ sits in the tree, so every path ccache sees
    # relative to base_dir is the same as in the tree's own build, and an unchanged file is a hit.
    scratch_build = os.path.join(tree, "build")
    configure = ["cmake", "-S", tree, "-B", scratch_build, "-DMPSCHECK_BUILD_TESTS=OFF"]
    for key in ("CMAKE_BUILD_TYPE", "Torch_DIR", "MPSCHECK_PYTHON", "MPSCHECK_TORCH_FMT_DIR", "MPSCHECK_PCH"):
        value = cache_value(build, key)
        if value:
            configure.append(f"-D{key}={value}")
    t0 = time.monotonic()
    run(configure)
    t1 = time.monotonic()
    jobs = os.environ.get("MPSCHECK_RECIPE_JOBS", "2")
    run(["cmake", "--build", scratch_build, "-j", jobs, "--target", "mpscheck", plugin_target,
         models_target])
    t2 = time.monotonic()
    print(f"built mpscheck, {plugin_target} and {models_target}: configure {t1 - t0:.0f} s, build {t2 - t1:.0f} s")

    binary = os.path.join(scratch_build, "mpscheck")
    listed = run([binary, "--list", "--all", "--filter", f"^op/{family}/"]).stdout
    ids = [l.split()[0] for l in listed.splitlines() if l.startswith(f"op/{family}/{new_case}/")]
    want = {f"op/{family}/{new_case}/f32/{layout}/{way}" for layout in ("contiguous", "transposed")
            for way in ("forward", "backward")}
    if set(ids) != want:
        raise RecipeError(f"recipe 1: expected the four cases {sorted(want)}, --list gave {ids}:\n{listed}")
    print(f"recipe 1: --list shows the four {new_case} cases")
    listed = run([binary, "--list", "--all", "--filter", f"^model/{model_name}/"]).stdout
    models = sorted(l.split()[0] for l in listed.splitlines() if l.startswith("model/"))
    if models != [f"model/{model_name}/infer", f"model/{model_name}/train"]:
        raise RecipeError(f"recipe 2: expected model/{model_name}/infer and /train, --list gave {models}")
    print(f"recipe 2: --list shows {', '.join(models)}")
    help_text = run([binary, "--help"]).stdout
    if f"--{flag} " not in help_text:
        raise RecipeError(f"recipe 3: --help does not offer --{flag}")
    out_dir = os.path.join(scratch, "run")
    out_file = os.path.join(out_dir, "cases." + flag)
    p = run([binary, "--filter", f"^op/{family}/{new_case}/", "--quick", "--target", "cpu", "--min-time", "0",
             "--report-dir", out_dir, f"--{flag}", out_file], check=False)
    if p.returncode != 0:
        raise RecipeError(f"recipe 1: the {new_case} cases do not all pass on cpu (exit {p.returncode}):\n{p.stdout[-3000:]}")
    with open(out_file, encoding="utf-8") as f:
        rows = [l for l in f.read().splitlines() if l.startswith(f"op/{family}/{new_case}/")]
    if len(rows) != 4:
        raise RecipeError(f"recipe 3: --{flag} wrote {len(rows)} rows for the four cases")
    print(f"recipe 1: the four {new_case} cases pass on cpu; recipe 3: --{flag} wrote a row for each")
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"check-recipes: the three recipes of CONTRIBUTING.md run verbatim ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except RecipeError as e:
        print(f"check-recipes: {e}")
        sys.exit(1)
