#!/usr/bin/env python3
"""Exports a Hugging Face transformers model as TorchScript files for `mpscheck --model`: one
traced graph per dtype, and the mpscheck command line that runs them.

    scripts/export-hf.py MODEL -o NAME --input input_ids=int64[1,128]:0..30522 \\
        --input attention_mask=int64[1,128]:1..2 [--dtypes bfloat16,float16] [--auto-class AutoModel]

MODEL is what `from_pretrained` takes (a hub id or a local folder). With --from-config, MODEL is
a model type (bert, gpt2, t5, vit, ...) built from its default config, changed by --set KEY=VALUE,
with weights drawn from --seed: nothing is downloaded.

Each --input is NAME=SPEC: the keyword argument of the model's forward and an mpscheck --input
spec (DTYPE[d0,...] with :LO..HI for integers, HI excluded). The traced forward takes the inputs
in the order given, which is the order mpscheck feeds them.

Why one graph per dtype: tracing records what the model's Python decided for the dtype it ran in
(the float32 minimum of an attention mask, T5's cast back to the weights' dtype after its float32
layer norm), so a graph traced in float32 does not compute in bfloat16 even with bfloat16 weights.
Each dtype is traced from the same model with its weights converted by `model.to(dtype)`.
Writes NAME.pt (float32, the reference), NAME.float64.pt (the gold reduced precision is judged
by) and NAME.DTYPE.pt for each of --dtypes.
"""
import argparse
import copy
import re
import shlex
import sys
import warnings

import torch
from torch import nn

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
SPEC = re.compile(r"^(\w+)\[([0-9, ]*)\](?::(-?\d+)\.\.(-?\d+))?$")


def parse_input(text):
    name, sep, spec = text.partition("=")
    m = SPEC.match(spec.strip()) if sep else None
    if not m or not name.isidentifier():
        sys.exit(f"export-hf: --input {text!r} is not NAME=DTYPE[d0,...][:LO..HI], "
                 "e.g. input_ids=int64[1,128]:0..30522")
    dtype_name, dims, lo, hi = m.groups()
    aliases = {"float": "float32", "long": "int64", "int": "int32", "half": "float16"}
    dtype_name = aliases.get(dtype_name, dtype_name)
    if dtype_name not in DTYPES and dtype_name not in ("int64", "int32", "bool"):
        sys.exit(f"export-hf: --input {text!r}: dtype {dtype_name} is not one of float32, float16, bfloat16, "
                 "float64, int64, int32, bool")
    shape = [int(d) for d in dims.split(",") if d.strip()]
    return {"name": name, "dtype": dtype_name, "shape": shape,
            "lo": int(lo) if lo is not None else 0, "hi": int(hi) if hi is not None else 10,
            "spec": spec.replace(" ", "")}


def example(spec, gen):
    if spec["dtype"] in DTYPES:
        return torch.randn(spec["shape"], generator=gen)
    if spec["dtype"] == "bool":
        return torch.randint(0, 2, spec["shape"], generator=gen).bool()
    return torch.randint(spec["lo"], spec["hi"], spec["shape"], generator=gen).to(getattr(torch, spec["dtype"]))


def value(text):
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


class Positional(nn.Module):
    """The model's forward with positional tensors, returning its tensor outputs by name."""

    def __init__(self, model, names):
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args)), return_dict=True)
        return {k: v for k, v in out.items() if isinstance(v, torch.Tensor)}


def load(args):
    import transformers

    transformers.logging.set_verbosity_error()
    auto = getattr(transformers, args.auto_class)
    overrides = {k: value(v) for k, v in (kv.split("=", 1) for kv in args.set)}
    if args.from_config:
        config = transformers.AutoConfig.for_model(args.model, **overrides)
        torch.manual_seed(args.seed)
        # The Auto classes build from a config; a model class (T5EncoderModel) takes it directly.
        model = auto.from_config(config) if args.auto_class.startswith("Auto") else auto(config)
    else:
        model = auto.from_pretrained(args.model, **overrides)
    # A cache of keys and values is state between calls, not an output to compare.
    if hasattr(model.config, "use_cache"):
        model.config.use_cache = False
    return model.eval()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("-o", "--output", required=True, help="NAME: writes NAME.pt, NAME.float64.pt, NAME.DTYPE.pt")
    p.add_argument("--input", action="append", required=True, help="NAME=SPEC, in the order mpscheck feeds them")
    p.add_argument("--dtypes", default="bfloat16,float16", help="reduced dtypes to trace in (default: %(default)s)")
    p.add_argument("--auto-class", default="AutoModel", help="transformers class (default: %(default)s)")
    p.add_argument("--from-config", action="store_true", help="MODEL is a model type; random weights from --seed")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override (repeatable)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    # Tracing warns for every Python decision it freezes; the per-dtype traces are the answer to that.
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    inputs = [parse_input(t) for t in args.input]
    reduced = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    for d in reduced:
        if d not in ("bfloat16", "float16"):
            sys.exit(f"export-hf: --dtypes {d}: trace in bfloat16 and/or float16 (float32 and float64 always are)")
    model = load(args)
    gen = torch.Generator().manual_seed(args.seed)
    examples = [example(s, gen) for s in inputs]
    names = [s["name"] for s in inputs]

    files = {}
    for dtype_name in ["float32", "float64"] + reduced:
        dtype = DTYPES[dtype_name]
        m = Positional(copy.deepcopy(model), names).to(dtype)
        xs = tuple(x.to(dtype) if x.is_floating_point() else x for x in examples)
        with torch.no_grad():
            traced = torch.jit.trace(m, xs, strict=False, check_trace=False)
        path = f"{args.output}.pt" if dtype_name == "float32" else f"{args.output}.{dtype_name}.pt"
        # The specs it was traced with: mpscheck refuses an --input of another dtype or rank up front.
        traced.save(path, _extra_files={"mpscheck/inputs": " ".join(s["spec"] for s in inputs)})
        files[dtype_name] = path

    command = ["mpscheck", "--model", files["float32"]]
    for s in inputs:
        command += ["--input", s["spec"]]
    for dtype_name, path in files.items():
        if dtype_name != "float32":
            command += ["--model-for", f"{dtype_name}={path}"]
    print(" ".join(shlex.quote(c) for c in command))


if __name__ == "__main__":
    main()
