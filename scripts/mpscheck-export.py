#!/usr/bin/env python3
"""Exports a PyTorch nn.Module for `mpscheck --model`: a .pt2 package compiled by AOTInductor
(torch.export), the same model as TorchScript for the eager reference, and the mpscheck command
that runs them.

    scripts/mpscheck-export.py my_pkg.my_module:Model --example 'randn(1,3,224,224)' --out DIR

MODEL is MODULE:NAME, imported from the current folder or sys.path. NAME is a class (built with no
arguments), a function returning a module, a module object, or a call such as
'Model(width=64)' evaluated in MODULE's namespace. The model is built after
torch.manual_seed(--seed), so its weights are drawn from the seed; it runs in eval mode.

Each --example is one positional input, in order: randn(d0,d1,...) for a float input,
randint(LO,HI,(d0,...)) for integers in [LO,HI) (token ids), or an mpscheck --input spec
(float32[1,3,224,224], int64[2,16]:0..1000). The package is compiled for those shapes.

Writes, in DIR:
  NAME.pt2   one package with a model per device and dtype, named DEVICE_DTYPE: cpu_float32 (the
             reference when there is no eager model), cpu_float64 (the float64 gold when there is
             none), cpu_DTYPE for each of --dtypes, and on a machine with MPS (or CUDA)
             mps_float32 and mps_DTYPE. Each records the --input specs and the torch version.
  NAME.pt    the model as TorchScript (torch.jit.script, else torch.jit.trace), which mpscheck runs
             eagerly on the CPU as the float32 reference and in float64 as the gold
             (--eager), so compiled code is judged against the model's own eager arithmetic.
  NAME.float64.pt  a float64 trace, when the model had to be traced (a trace keeps float32 constants).

and prints the mpscheck command that runs them (on stdout; notes go to stderr).
"""
import argparse
import copy
import importlib
import os
import re
import shlex
import sys
import tempfile
import time
import warnings

import torch

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
INT_DTYPES = {"int64": torch.int64, "int32": torch.int32, "bool": torch.bool}
SPEC = re.compile(r"^(\w+)\[([0-9, ]*)\](?::(-?\d+)\.\.(-?\d+))?$")


def fail(message):
    sys.exit(f"mpscheck-export: {message}")


def note(message):
    print(f"mpscheck-export: {message}", file=sys.stderr, flush=True)


def parse_example(text):
    """An --example as an mpscheck --input spec: {"spec", "dtype", "shape", "lo", "hi"}."""
    t = text.replace(" ", "")
    m = SPEC.match(t)
    if m:
        dtype, dims, lo, hi = m.groups()
        dtype = {"float": "float32", "long": "int64", "half": "float16"}.get(dtype, dtype)
        if dtype not in DTYPES and dtype not in INT_DTYPES:
            fail(f"--example {text!r}: dtype {dtype} is not one of {', '.join(list(DTYPES) + list(INT_DTYPES))}")
        shape = [int(d) for d in dims.split(",") if d]
        if dtype in INT_DTYPES and dtype != "bool" and lo is None:
            fail(f"--example {text!r}: give integers a range, {dtype}[...]:LO..HI (HI excluded)")
        lo, hi = (int(lo), int(hi)) if lo is not None else (0, 2)
        return {"spec": t, "dtype": dtype, "shape": shape, "lo": lo, "hi": hi}
    m = re.match(r"^randn\(\(?([0-9,]*?)\)?\)$", t)
    if m:
        shape = [int(d) for d in m.group(1).split(",") if d]
        return {"spec": f"float32[{','.join(map(str, shape))}]", "dtype": "float32", "shape": shape, "lo": 0, "hi": 2}
    m = re.match(r"^randint\((-?\d+),(-?\d+),\(([0-9,]*)\)\)$", t)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        shape = [int(d) for d in m.group(3).split(",") if d]
        if hi <= lo:
            fail(f"--example {text!r}: randint needs LO < HI (HI excluded)")
        return {"spec": f"int64[{','.join(map(str, shape))}]:{lo}..{hi}", "dtype": "int64", "shape": shape,
                "lo": lo, "hi": hi}
    fail(f"--example {text!r} is not randn(d0,d1,...), randint(LO,HI,(d0,...)) or an mpscheck spec "
         "such as float32[1,3,224,224] or int64[2,16]:0..1000")


def example_tensor(spec, gen):
    if spec["dtype"] in DTYPES:
        return torch.randn(spec["shape"], generator=gen)
    if spec["dtype"] == "bool":
        return torch.randint(0, 2, spec["shape"], generator=gen).bool()
    return torch.randint(spec["lo"], spec["hi"], spec["shape"], generator=gen).to(INT_DTYPES[spec["dtype"]])


def build_model(target, seed):
    module_name, sep, expr = target.partition(":")
    if not sep or not module_name or not expr:
        fail(f"{target!r} is not MODULE:NAME (e.g. my_pkg.my_module:Model)")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # the user's import error, said in one line
        fail(f"cannot import {module_name}: {type(e).__name__}: {e}")
    torch.manual_seed(seed)
    try:
        obj = eval(expr, vars(module)) if "(" in expr else getattr(module, expr)
        if not isinstance(obj, torch.nn.Module) and callable(obj):
            obj = obj()
    except Exception as e:
        fail(f"cannot build {target}: {type(e).__name__}: {e}")
    if not isinstance(obj, torch.nn.Module):
        fail(f"{target} is a {type(obj).__name__}, not a torch.nn.Module")
    return obj.eval()


def cast(xs, dtype):
    return tuple(x.to(dtype) if x.is_floating_point() else x for x in xs)


def export_torchscript(model, xs, specs, out):
    """NAME.pt, scripted if torch.jit.script takes the model, else traced; returns (how, files)."""
    record = {"mpscheck/inputs": " ".join(s["spec"] for s in specs)}
    with warnings.catch_warnings():
        # torch.jit.* warn that TorchScript is deprecated; here it is the eager reference, by design.
        warnings.simplefilter("ignore")
        try:
            scripted = torch.jit.script(copy.deepcopy(model))
            with torch.no_grad():
                scripted(*xs)
            scripted.save(out + ".pt", _extra_files=record)
            return "scripted", {}
        except Exception as e:
            why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            note(f"torch.jit.script refused the model ({why[:200]}); tracing it instead")
        files = {}
        try:
            for name in ("float32", "float64"):
                m = copy.deepcopy(model).to(DTYPES[name])
                with torch.no_grad():
                    traced = torch.jit.trace(m, cast(xs, DTYPES[name]), strict=False, check_trace=False)
                path = out + (".pt" if name == "float32" else f".{name}.pt")
                traced.save(path, _extra_files=record)
                if name != "float32":
                    files[name] = path
            return "traced", files
        except Exception as e:
            why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            note(f"torch.jit.trace refused the model too ({why[:200]}): no eager reference; the package's "
                 "cpu_float32 and cpu_float64 models stand in for it")
            return None, {}


def compile_model(model, xs, dtype, device, metadata):
    m = copy.deepcopy(model).to(device=device, dtype=dtype)
    args = tuple(x.to(device) for x in cast(xs, dtype))
    ep = torch.export.export(m, args)
    return torch._inductor.aot_compile(ep.module(), args, options={"aot_inductor.package": True,
                                                                   "aot_inductor.metadata": metadata})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("model", help="MODULE:NAME, e.g. my_pkg.my_module:Model or 'my_pkg.nets:Net(width=64)'")
    p.add_argument("--example", action="append", required=True,
                   help="an input, in order: randn(1,3,224,224), randint(0,1000,(2,16)) or an mpscheck spec")
    p.add_argument("--out", required=True, help="folder to write into (created)")
    p.add_argument("--name", help="file name stem (default: the model's class name, lower case)")
    p.add_argument("--dtypes", default="bfloat16",
                   help="reduced dtypes to compile for, comma-separated, or 'none' (default: %(default)s)")
    p.add_argument("--devices", help="devices to compile for (default: cpu, and mps or cuda where present)")
    p.add_argument("--no-float64", action="store_true",
                   help="do not compile cpu_float64 (the eager TorchScript model gives the float64 gold)")
    p.add_argument("--seed", type=int, default=0, help="seed for the weights and the example inputs")
    args = p.parse_args()

    specs = [parse_example(e) for e in args.example]
    reduced = [] if args.dtypes.strip() == "none" else [d.strip() for d in args.dtypes.split(",") if d.strip()]
    for d in reduced:
        if d not in ("bfloat16", "float16"):
            fail(f"--dtypes {d}: compile for bfloat16 and/or float16 (float32 and float64 always are)")
    if args.devices:
        devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    else:
        devices = ["cpu"] + (["mps"] if torch.backends.mps.is_available() else []) + (
            ["cuda"] if torch.cuda.is_available() else [])
    for d in devices:
        if d not in ("cpu", "mps", "cuda"):
            fail(f"--devices {d}: compile for cpu, mps or cuda")
        if (d == "mps" and not torch.backends.mps.is_available()) or (d == "cuda" and not torch.cuda.is_available()):
            fail(f"--devices {d}: this torch ({torch.__version__}) has no usable {d} device here; compile for it "
                 "on a machine that has one")
    if "cpu" not in devices:
        fail("--devices must include cpu: the float32 reference is compiled for the CPU")

    model = build_model(args.model, args.seed)
    name = args.name or type(model).__name__.lower()
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, name)
    gen = torch.Generator().manual_seed(args.seed)
    xs = tuple(example_tensor(s, gen) for s in specs)
    with torch.no_grad():
        try:
            model(*xs)
        except Exception as e:
            fail(f"the model raised on the --example inputs: {type(e).__name__}: {str(e)[:300]}")

    how, per_dtype = export_torchscript(model, xs, specs, out)
    if how:
        note(f"wrote {out}.pt ({how}){''.join(f', {f}' for f in per_dtype.values())}")

    metadata = {"mpscheck.inputs": " ".join(s["spec"] for s in specs), "mpscheck.torch_version": torch.__version__,
                "mpscheck.model": args.model}
    plan = [("cpu", "float32")]
    if not args.no_float64 or not how:
        plan.append(("cpu", "float64"))
    plan += [("cpu", d) for d in reduced]
    for device in devices:
        if device != "cpu":
            plan += [(device, "float32")] + [(device, d) for d in reduced]
    from torch._inductor.package import package_aoti

    compiled = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for device, dtype in plan:
            start = time.monotonic()
            try:
                compiled[f"{device}_{dtype}"] = compile_model(model, xs, DTYPES[dtype], device, metadata)
            except Exception as e:
                if dtype == "float32" and device == "cpu":
                    fail(f"torch.export or AOTInductor refused the model: {type(e).__name__}: {str(e)[:400]}")
                note(f"{device}_{dtype}: not compiled ({type(e).__name__}: {str(e).strip()[:300]})")
                continue
            note(f"compiled {device}_{dtype} in {time.monotonic() - start:.1f} s")
        package_aoti(out + ".pt2", compiled)
    note(f"wrote {out}.pt2 ({', '.join(compiled)})")

    command = ["mpscheck", "--model", out + ".pt2"]
    for s in specs:
        command += ["--input", s["spec"]]
    if how:
        command += ["--eager", out + ".pt"]
        for dtype, path in per_dtype.items():
            command += ["--model-for", f"{dtype}={path}"]
        note("add --target cpu to check the compiled code against the eager model alone")
    print(" ".join(shlex.quote(c) for c in command))


if __name__ == "__main__":
    main()
