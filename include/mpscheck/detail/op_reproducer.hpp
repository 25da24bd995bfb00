// The op SDK's Python reproducer: a self-contained script (only `torch`) that rebuilds a case's
// inputs from the same seed and runs it on CPU and on the target. Part of <mpscheck/op.hpp>.
#pragma once

#include <sstream>
#include <string>

namespace mpscheck::op {

inline std::string OpWorkload::reproducer(const ReproTarget& target) const {
  const bool floating = c10::isFloatingType(dtype_);
  const std::string target_dtype =
      floating ? (dtype_ == c10::kFloat ? "torch." + target.dtype : dtype_python(dtype_)) : dtype_python(dtype_);
  std::ostringstream py;
  py << "# mpscheck reproducer for " << id() << "\n"
     << "# Runs the op on CPU (float32 reference) and on DEVICE, prints both and the difference.\n"
     << "import json, os\n"
     << "import torch\n\n"
     << "DEVICE = \"" << target.device << "\"\n"
     << "DTYPE = " << target_dtype << "\n"
     << "SEED = " << target.seed << "\n"
     << "BACKWARD = " << (backward_ ? "True" : "False") << "\n"
     << "WRITTEN = [";  // the args the op writes in place, compared after the call
  for (const Arg& a : def_.args)
    if (a.written) py << "\"" << a.name << "\", ";
  py << "]\n\n"
     << "def make_inputs(device, dtype):\n"
     << "    gen = torch.Generator().manual_seed(SEED)\n"
     << "    leaves, args = [], {}\n";
  for (const Arg& a : def_.args) {
    c10::ScalarType t = a.dtype == c10::ScalarType::Undefined ? dtype_ : a.dtype;
    const std::string dt = c10::isFloatingType(t) ? "dtype" : dtype_python(t);
    if (a.cpu_scalar)  // a 0-dim tensor left on the CPU beside the device's tensors
      py << "    base = torch.tensor((" << python_draw(a, dtype_) << ").item(), dtype=" << dt
         << ")  # stays on the CPU\n";
    else
      py << "    base = (" << python_draw(a, dtype_) << ").to(device=device, dtype=" << dt << ")\n";
    if (backward_ && a.grad && c10::isFloatingType(t)) py << "    base.requires_grad_(True)\n";
    py << "    leaves.append((\"" << a.name << "\", base))\n"
       << "    args[\"" << a.name << "\"] = " << python_layout(python_storage_offset("base", a), a) << "\n";
  }
  py << "    return leaves, args\n\n"
     << "def written(args, before):\n"  // what the call moved each written arg by, and where it left it
     << "    moved = {\"arg_update/\" + n: (args[n].detach() - before[n]).cpu() for n in WRITTEN}\n"
     << "    return {**moved, **{\"arg/\" + n: args[n].detach().cpu() for n in WRITTEN}}\n\n"
     << "def run(device, dtype):\n"
     << "    leaves, args = make_inputs(device, dtype)\n"
     << "    before = {n: args[n].detach().clone() for n in WRITTEN}\n"
     << "    with torch.set_grad_enabled(BACKWARD):\n"
     << "        out = (lambda ";
  for (size_t i = 0; i < def_.args.size(); ++i) py << (i ? ", " : "") << def_.args[i].name;
  py << ": " << def_.python << ")(**args)\n"
     << "    outs = list(out) if isinstance(out, (tuple, list)) else [out]\n"
     << "    if not BACKWARD:\n"
     << "        results = {(\"out\" if len(outs) == 1 else \"out%d\" % i): o.detach().cpu() for i, o in "
        "enumerate(outs)}\n"
     << "        return {**results, **written(args, before)}\n"
     << "    gen = torch.Generator().manual_seed(SEED + 1)\n"
     << "    total = None\n"
     << "    for o in outs:\n"
     << "        if not o.requires_grad:\n"
     << "            continue\n"
     << "        g = torch.randn(list(o.shape), generator=gen).to(device=o.device, dtype=o.dtype)\n"
     << "        term = (o * g).sum()\n"
     << "        total = term if total is None else total + term\n"
     << "    total.backward()\n"
     << "    grads = {\"grad/\" + name: leaf.grad.detach().cpu() for name, leaf in leaves if leaf.grad is not None}\n"
     << "    return {**grads, **written(args, before)}\n\n"
     << "reference = run(\"cpu\", torch.float32)\n"
     << "target = run(DEVICE, DTYPE)\n"
     << "for name, ref in reference.items():\n"
     << "    got = target[name]\n"
     << "    print(name, \"cpu:\", ref.flatten()[:8].tolist())\n"
     << "    print(name, DEVICE + \":\", got.flatten()[:8].tolist())\n"
     << "    if ref.is_floating_point() or got.is_floating_point():\n"
     << "        diff = (got.double() - ref.double()).abs().max().item()\n"
     << "    else:\n"
     << "        diff = (got.long() - ref.long()).abs().max().item()\n"
     << "    print(name, \"max abs difference:\", diff)\n"
     << "# For mpscheck's own tests: the reference values, to check the inputs were rebuilt exactly.\n"
     << "if os.environ.get(\"MPSCHECK_REPRO_JSON\"):\n"
     << "    with open(os.environ[\"MPSCHECK_REPRO_JSON\"], \"w\") as f:\n"
     << "        finite = lambda v: v if v == v and abs(v) != float(\"inf\") else None\n"
     << "        json.dump({n: [finite(v) for v in r.flatten()[:16].double().tolist()] for n, r in reference.items()}, "
        "f)\n";
  return py.str();
}

}  // namespace mpscheck::op
