#!/usr/bin/env python3
"""Exports the ATen calls PyTorch's OpInfo samples make, for mpscheck's OpInfo replay cases.

    scripts/export-opinfo.py OUT.pt [--max-samples N] [--ops REGEX]

For every entry of PyTorch's OpInfo database (torch.testing._internal.common_methods_invocations
.op_db; an entry's full name is op.name, plus "." and op.variant_test_name when that is not empty,
e.g. nn.functional.gelu, max.reduction_with_dim), runs up to N (default 4) of its sample inputs on
the CPU in float32 and records the top-level ATen calls each sample makes, with a
TorchDispatchMode (calls an ATen kernel makes internally are not seen: the mode is off inside its
own __torch_dispatch__).

  forward   op(sample.input, *sample.args, **sample.kwargs)
  backward  when the entry supports autograd in float32, the samples are drawn with
            requires_grad=True, and torch.autograd.backward(outputs, grads) runs on the floating
            outputs that require grad, each grad a torch.randn_like drawn from a seed of its own.

torch.manual_seed(0) runs before each entry, tensors the empty* factories return are zeroed and
memory kernels allocate is filled (torch.use_deterministic_algorithms(True, warn_only=True) with
fill_uninitialized_memory), so the file is the same from run to run (torch.save names its archive
folder after OUT's stem). --ops keeps
the entries whose full name re.search finds REGEX in (the others are left out of the file). A
sample that raises is left out whole and counted by exception type; an entry whose CPU dtypes lack
float32 is skipped, with the reason.

A call is dropped (counted in its entry's "dropped" under the reason) when: its schema returns no
Tensor or Tensor[]; it is a view (func.is_view); it is no computation (NOT_COMPUTE: detach, alias,
copy_, clone, _to_copy, the *_like / new_* / empty* / zeros / ones / full factories, scalar_tensor,
lift_fresh, _local_scalar_dense, item, fill_ and zero_, _unsafe_view, resize_, in-place
squeeze_/unsqueeze_/transpose_/t_/as_strided_/set_); no argument (nested ones included) is a floating-point tensor;
its tensors hold more than MAX_CALL_BYTES (1 MiB); its result is complex;
or an argument cannot be encoded for LibTorch's unpickler (complex values or tensors, sparse,
quantized, nested or meta tensors, tensors not on the cpu, dtypes outside the ten below, ints
beyond int64, strings that read as one of the tags below, any other Python type).

Encoding of an argument, so that C++ torch::pickle_load reads it (tensors, None, bool, int, float,
str, list, tuple, dict with string keys):
  Tensor                 a copy with the same dtype, shape, strides and storage offset over a
                         storage of its own of storage_offset + 1 + sum((size-1)*stride) elements
                         (storage_offset when it has no element), zero outside the view; stride-0
                         and other overlapping layouts are kept as they are; detached.
  None/bool/int/float/str  as is (a SymInt/SymFloat: its int/float)
  list, tuple            a list of the encoded elements
  torch.dtype            "dtype:Float" (c10's names: Float Double Half BFloat16 Long Int Short Char
                         Byte Bool; any other dtype drops the call)
  torch.memory_format    "memory_format:Contiguous|ChannelsLast|ChannelsLast3d|Preserve"
  torch.layout           "layout:Strided" (other layouts drop the call)
  torch.device           "device:cpu"

Calls are deduplicated over the whole export by (op, overload, direction, arguments with each
tensor as its dtype/shape/strides/offset and every other value as its repr): a repeat adds
"<full name>/s<sample>" to the first record's "also" (one item per repeat, so 1 + len(also) is how
often the call was made). The file (torch.save; torch.load(OUT, weights_only=True) reads it):

  {"format": 1, "torch": torch.__version__, "max_samples": N,
   "entries": [{"name", "op_name", "variant_test_name", "aten_name", "samples" (tried),
                "failed_samples" {ExcType: n}, "calls" (records made), "duplicates" (calls deduplicated away),
                "dropped" {reason: n}, "skipped" ("" or why), "dtypes_cpu" [...],
                "backward_dtypes_cpu" [...]}, ...],
   "calls": [{"opinfo", "sample" (0-based), "direction" ("forward"|"backward"), "index" (0-based
              order among the sample's kept or deduplicated calls in that direction), "op"
              ("aten::addmm"), "overload" ("" for the default), "args" [...], "kwargs" {...},
              "also" [...], "quick" (True on the records of each entry's sample with the
              most input elements: mark_quick)}, ...]}

Prints one summary line on stderr. Runs single-threaded (torch.set_num_threads(1)); importing
op_db takes about 10 s, the whole export with N=4 about 20 s. After writing, reads the file back
with torch.load(weights_only=True) and with LibTorch's unpickler (torch._C._pickle_load_obj, the
reader C++ torch::pickle_load uses).

Exit 0: written; 1: the file did not read back; 2: usage or input error.
"""

import argparse
import numbers
import os
import re
import sys
import time
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

FORMAT = 1

# torch dtype -> c10's ScalarType name (c10::toString), the dtypes the C++ reader accepts.
DTYPE_NAMES = {
    torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16",
    torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char",
    torch.uint8: "Byte", torch.bool: "Bool",
}
MEMORY_FORMAT_NAMES = {
    torch.contiguous_format: "Contiguous", torch.channels_last: "ChannelsLast",
    torch.channels_last_3d: "ChannelsLast3d", torch.preserve_format: "Preserve",
}
TAG_PREFIXES = ("dtype:", "memory_format:", "layout:", "device:")

# Ops that move, alias or make tensors rather than compute: replaying them checks nothing.
NOT_COMPUTE = {
    "aten::detach", "aten::alias", "aten::copy_", "aten::clone", "aten::_to_copy", "aten::empty_like",
    "aten::zeros_like", "aten::ones_like", "aten::new_empty", "aten::new_zeros", "aten::new_ones",
    "aten::empty", "aten::empty_strided", "aten::zeros", "aten::ones", "aten::full", "aten::scalar_tensor",
    "aten::lift_fresh", "aten::_local_scalar_dense", "aten::item", "aten::fill_",
    # The same kinds, beyond the list above: uninitialized or constant results, in-place metadata.
    "aten::new_empty_strided", "aten::empty_permuted", "aten::new_full", "aten::full_like", "aten::fill",
    "aten::zero_", "aten::lift_fresh_copy", "aten::detach_", "aten::_unsafe_view", "aten::resize_",
    "aten::resize_as_", "aten::squeeze_", "aten::unsqueeze_", "aten::transpose_", "aten::t_",
    "aten::as_strided_", "aten::set_",
}

try:
    from numpy import bool_ as numpy_bool
except ImportError:  # numpy is optional for torch
    class numpy_bool:  # noqa: N801 - stands in for numpy.bool_
        pass

# Factories whose result holds whatever the memory held: zeroed as they return, so the file is the
# same from run to run when a later call takes their result (an out= argument, a buffer to fill).
UNINITIALIZED = {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
                 "aten::new_empty_strided", "aten::empty_permuted"}

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


class Unencodable(Exception):
    """An argument value the file format cannot hold; its message is the drop reason."""


def dtype_string(d):
    """A dtype as the entry lists it: str(torch.float32) minus "torch." -> "float32"."""
    return str(d).replace("torch.", "")


def copy_tensor(t):
    """A detached copy of t with its dtype, shape, strides and storage offset, over a zero-filled
    storage of its own just large enough for the view (overlapping strides stay overlapping)."""
    if t.numel() == 0:
        needed = 0
    else:
        needed = 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    length = t.storage_offset() + needed
    storage = torch.zeros(length, dtype=t.dtype)
    view = storage.as_strided(t.shape, t.stride(), t.storage_offset())
    if t.numel() > 0:
        # Write through flat positions: copy_ refuses a destination whose elements overlap.
        positions = torch.arange(length).as_strided(t.shape, t.stride(), t.storage_offset())
        storage[positions.reshape(-1)] = t.detach().reshape(-1)
    return view


class Encoder:
    """Encodes one call's arguments, noting whether any tensor is floating-point."""

    def __init__(self):
        self.has_float_tensor = False

    def tensor(self, t):
        if t.is_complex():
            raise Unencodable("complex")
        if t.layout != torch.strided or t.is_quantized or t.is_nested:
            raise Unencodable("not a dense tensor")
        if t.device.type == "meta":
            raise Unencodable("not a dense tensor")
        if t.device.type != "cpu":
            raise Unencodable("tensor not on cpu")
        if t.dtype not in DTYPE_NAMES:
            raise Unencodable("tensor dtype " + dtype_string(t.dtype))
        if t.is_floating_point():
            self.has_float_tensor = True
        return copy_tensor(t)

    def value(self, v):
        if isinstance(v, torch.Tensor):
            return self.tensor(v)
        # Plain Python types only (a numpy float is a float subclass the C++ unpickler cannot build).
        if v is None:
            return v
        if isinstance(v, (bool, numpy_bool)):
            return bool(v)
        if isinstance(v, numbers.Integral):
            if not INT64_MIN <= int(v) <= INT64_MAX:
                raise Unencodable("int beyond int64")
            return int(v)
        if isinstance(v, numbers.Real):
            return float(v)
        if isinstance(v, str):
            if v.startswith(TAG_PREFIXES):
                raise Unencodable("string that reads as a tag")
            return str(v)
        if isinstance(v, torch.SymInt):
            return self.value(int(v))
        if isinstance(v, torch.SymFloat):
            return float(v)
        if isinstance(v, complex):
            raise Unencodable("complex")
        if isinstance(v, (list, tuple)):
            return [self.value(e) for e in v]
        if isinstance(v, torch.dtype):
            if v.is_complex:
                raise Unencodable("complex")
            if v not in DTYPE_NAMES:
                raise Unencodable("dtype " + dtype_string(v))
            return "dtype:" + DTYPE_NAMES[v]
        if isinstance(v, torch.memory_format):
            if v not in MEMORY_FORMAT_NAMES:
                raise Unencodable("memory format " + str(v))
            return "memory_format:" + MEMORY_FORMAT_NAMES[v]
        if isinstance(v, torch.layout):
            if v != torch.strided:
                raise Unencodable("layout " + str(v))
            return "layout:Strided"
        if isinstance(v, torch.device):
            if v.type != "cpu":
                raise Unencodable("device " + v.type)
            return "device:cpu"
        raise Unencodable("value of type " + type(v).__name__)


def signature(v):
    """The dedup form of an encoded value: tensors as metadata, other values as their repr."""
    if isinstance(v, torch.Tensor):
        return ("T", dtype_string(v.dtype), tuple(v.shape), tuple(v.stride()), v.storage_offset())
    if isinstance(v, list):
        return ("L",) + tuple(signature(e) for e in v)
    if isinstance(v, dict):
        return ("D",) + tuple((k, signature(e)) for k, e in sorted(v.items()))
    return repr(v)


# A call whose tensors hold more than this is left out: OpInfo's few large samples (grid_sampler_3d's
# four took 53 of the file's 60 MB) would make every mpscheck process read them at start.
MAX_CALL_BYTES = 1 << 20


def tensor_total(v, measure):
    """The sum of measure(t) over the tensors an encoded value holds (lists and dicts included)."""
    if isinstance(v, torch.Tensor):
        return measure(v)
    if isinstance(v, (list, tuple)):
        return sum(tensor_total(e, measure) for e in v)
    if isinstance(v, dict):
        return sum(tensor_total(e, measure) for e in v.values())
    return 0


def tensor_bytes(v):
    """Bytes of storage the encoded value's tensors hold."""
    return tensor_total(v, lambda t: t.untyped_storage().nbytes())


def returns_tensor(schema):
    """Whether the schema returns a Tensor or a Tensor[] among its results."""
    return any(str(r.type) in ("Tensor", "Tensor[]") for r in schema.returns)


def drop_reason_before_encoding(func):
    """Why a call is dropped whatever its arguments, or "" when that depends on them."""
    if not returns_tensor(func._schema):
        return "returns no tensor"
    if func.is_view:
        return "view"
    if func._schema.name in NOT_COMPUTE:
        return "not compute"
    return ""


class Recorder(TorchDispatchMode):
    """Records the top-level ATen calls made while it is on, for one sample and direction.

    `observed` gets, per call, either ("dropped", reason) or ("call", record dict, dedup key).
    Arguments are encoded before the call runs, so in-place ops are recorded with their inputs.
    """

    def __init__(self, direction):
        super().__init__()
        self.direction = direction
        self.observed = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        seen = len(self.observed)
        self.observe(func, args, kwargs)
        result = func(*args, **kwargs)
        if func._schema.name in UNINITIALIZED and isinstance(result, torch.Tensor):
            result.zero_()  # later calls (an out=, rrelu's noise) would record leftover memory
        # A complex result (torch.complex, polar, view_as_complex): the replay compares real tensors.
        leaves, _ = tree_flatten(result)
        if any(isinstance(t, torch.Tensor) and t.is_complex() for t in leaves) and self.observed[seen][0] == "call":
            self.observed[seen] = ("dropped", "complex result")
        return result

    def observe(self, func, args, kwargs):
        reason = drop_reason_before_encoding(func)
        if not reason:
            encoder = Encoder()
            try:
                enc_args = [encoder.value(a) for a in args]
                enc_kwargs = {str(k): encoder.value(v) for k, v in kwargs.items()}
            except Unencodable as e:
                reason = str(e)
            else:
                if not encoder.has_float_tensor:
                    reason = "no floating-point tensor"
                elif tensor_bytes(enc_args) + tensor_bytes(enc_kwargs) > MAX_CALL_BYTES:
                    reason = f"inputs over {MAX_CALL_BYTES >> 20} MiB"
        if reason:
            self.observed.append(("dropped", reason))
            return
        schema = func._schema
        record = {"op": schema.name, "overload": schema.overload_name, "direction": self.direction,
                  "args": enc_args, "kwargs": enc_kwargs}
        key = (schema.name, schema.overload_name, self.direction, signature(enc_args), signature(enc_kwargs))
        self.observed.append(("call", record, key))


def floating_outputs_requiring_grad(out):
    """The floating-point tensors in an op's (possibly nested) output that autograd can go back from."""
    leaves, _ = tree_flatten(out)
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad]


def run_sample(op, sample, index, backward):
    """Runs one sample forward (and backward when asked); returns the recorders' observations."""
    forward = Recorder("forward")
    with forward:
        out = op(sample.input, *sample.args, **sample.kwargs)
    observed = list(forward.observed)
    if backward:
        outs = floating_outputs_requiring_grad(out)
        if outs:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(1000 + index)
                grads = [torch.randn_like(t) for t in outs]
            back = Recorder("backward")
            with back:
                torch.autograd.backward(outs, grads)
            observed += back.observed
    return observed


def tensor_elements(v):
    """Elements of the tensors an encoded value holds."""
    return tensor_total(v, lambda t: t.numel())


def mark_quick(records):
    """The quick selection of one entry: the records of its sample with the most input elements.

    OpInfo's first samples are often a 0-dim or an empty tensor (relu's first two give its backward
    nothing but zeros to scale), where a wrong kernel has nothing to get wrong; its largest sample
    is the one a bug shows in.
    """
    size = {}
    for r in records:
        size[r["sample"]] = size.get(r["sample"], 0) + tensor_elements(r["args"]) + tensor_elements(r["kwargs"])
    if not size:
        return
    best = max(sorted(size), key=lambda k: size[k])
    for r in records:
        r["quick"] = r["sample"] == best


class Export:
    """The export being built: entries, records and the dedup index over all of them."""

    def __init__(self, max_samples):
        self.max_samples = max_samples
        self.entries = []
        self.calls = []
        self.first = {}  # dedup key -> the record that holds it

    def add_entry(self, op):
        name = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
        dtypes = op.supported_dtypes("cpu")
        entry = {
            "name": name, "op_name": str(op.name), "variant_test_name": str(op.variant_test_name),
            "aten_name": str(op.aten_name), "samples": 0, "failed_samples": {}, "calls": 0,
            "duplicates": 0, "dropped": {}, "skipped": "",
            "dtypes_cpu": sorted(dtype_string(d) for d in dtypes),
            "backward_dtypes_cpu": (sorted(dtype_string(d) for d in op.supported_backward_dtypes("cpu"))
                                    if op.supports_autograd else []),
        }
        self.entries.append(entry)
        if torch.float32 not in dtypes:
            entry["skipped"] = "float32 not supported on cpu"
            return
        torch.manual_seed(0)
        backward = bool(op.supports_autograd) and torch.float32 in op.supported_backward_dtypes("cpu")
        first_record = len(self.calls)
        try:
            samples = iter(op.sample_inputs("cpu", torch.float32, requires_grad=backward))
            for k in range(self.max_samples):
                try:
                    sample = next(samples, None)
                    if sample is None:
                        break
                    entry["samples"] += 1
                    observed = run_sample(op, sample, k, backward)
                except Exception as e:  # a sample PyTorch itself cannot run: left out
                    failed = entry["failed_samples"]
                    failed[type(e).__name__] = failed.get(type(e).__name__, 0) + 1
                    continue
                self.commit(entry, k, observed)
        except Exception as e:  # op.sample_inputs itself raised
            failed = entry["failed_samples"]
            failed[type(e).__name__] = failed.get(type(e).__name__, 0) + 1
        mark_quick(self.calls[first_record:])

    def commit(self, entry, k, observed):
        """Adds one sample's observations to the export; returns how many records it made."""
        made = 0
        index = {"forward": 0, "backward": 0}
        where = "%s/s%d" % (entry["name"], k)
        for item in observed:
            if item[0] == "dropped":
                entry["dropped"][item[1]] = entry["dropped"].get(item[1], 0) + 1
                continue
            _, record, key = item
            i = index[record["direction"]]
            index[record["direction"]] += 1
            if key in self.first:
                self.first[key]["also"].append(where)
                entry["duplicates"] += 1
                continue
            rec = {"opinfo": entry["name"], "sample": k, "direction": record["direction"], "index": i,
                   "op": record["op"], "overload": record["overload"], "args": record["args"],
                   "kwargs": record["kwargs"], "also": [], "quick": False}
            self.first[key] = rec
            self.calls.append(rec)
            entry["calls"] += 1
            made += 1
        return made

    def result(self):
        return {"format": FORMAT, "torch": str(torch.__version__), "max_samples": self.max_samples,
                "entries": self.entries, "calls": self.calls}


class Parser(argparse.ArgumentParser):
    """argparse with one error line (and exit 2) instead of the usage text."""

    def error(self, message):
        print("export-opinfo.py: " + message, file=sys.stderr)
        sys.exit(2)


def check_loads_back(path, calls):
    """"" when the file reads back with torch.load(weights_only=True) and, where this torch has it,
    with LibTorch's own unpickler (torch._C._pickle_load_obj, what C++ torch::pickle_load runs);
    else what went wrong, on one line."""
    readers = [("torch.load(weights_only=True)", lambda: torch.load(path, weights_only=True))]
    if hasattr(torch._C, "_pickle_load_obj"):
        def libtorch():
            with open(path, "rb") as f:
                return torch._C._pickle_load_obj(f.read())
        readers.append(("LibTorch's unpickler", libtorch))
    for name, read in readers:
        try:
            back = read()
            if len(back["calls"]) != calls:
                return "%s reads %d calls, %d were written" % (name, len(back["calls"]), calls)
        except Exception as e:
            text = str(e).strip()
            return "%s: %s" % (name, text.splitlines()[0] if text else type(e).__name__)
        del back
    return ""


def parse_args(argv):
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("out", metavar="OUT.pt", help="file to write (torch.save)")
    parser.add_argument("--max-samples", type=int, default=4, metavar="N",
                        help="samples per OpInfo entry (default 4)")
    parser.add_argument("--ops", metavar="REGEX", help="only entries whose full name matches (re.search)")
    args = parser.parse_args(argv)
    if args.max_samples < 1:
        parser.error("--max-samples must be at least 1")
    if args.ops is not None:
        try:
            args.ops = re.compile(args.ops)
        except re.error as e:
            parser.error("--ops: not a regular expression: %s" % e)
    folder = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(folder):
        parser.error("cannot write %s: no folder %s" % (args.out, folder))
    return args


def main(argv):
    args = parse_args(argv)
    start = time.monotonic()
    torch.set_num_threads(1)
    # Memory a kernel allocates and leaves partly unwritten (ctc_loss's log_alpha, which its
    # backward takes) is filled with NaN instead of what it held, so the file is reproducible;
    # warn_only keeps ops without a deterministic implementation running.
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

    export = Export(args.max_samples)
    for op in op_db:
        name = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
        if args.ops is None or args.ops.search(name):
            export.add_entry(op)
    if not export.entries:
        print("export-opinfo.py: --ops %s matches no OpInfo entry" % args.ops.pattern, file=sys.stderr)
        return 2
    torch.save(export.result(), args.out)
    problem = check_loads_back(args.out, len(export.calls))
    if problem:
        print("export-opinfo.py: %s does not load back: %s" % (args.out, problem), file=sys.stderr)
        return 1
    forward = sum(1 for c in export.calls if c["direction"] == "forward")
    with_calls = sum(1 for e in export.entries if e["calls"] > 0)
    print("export-opinfo.py: %d entries, %d with calls, %d records (%d forward, %d backward), %.1f MB, %.0f s"
          % (len(export.entries), with_calls, len(export.calls), forward, len(export.calls) - forward,
             os.path.getsize(args.out) / 1e6, time.monotonic() - start), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
