// The sim's in-network classes (issue 49), per-op bugs a network's comparison at its outputs can
// dilute and its calls replayed alone must not:
//  - `weight-grad`: mm with a transposed first operand (a Linear's weight gradient, input^T @ grad)
//    10% off on every element, up and down in turn;
//  - `batch-row`: a Linear's kernel (addmm: a product with its bias) that computes the last row of its batch low, by
//  about nine units of the dtype's rounding
// (bfloat16 3.5%, float16 0.45%; float32 2.5e-4), on outputs of 32 rows and 16 columns and more. One
// row of one layer's output, inside a network, is what the network's own comparison at its outputs
// dilutes: the next layers mix it with honest rounding, and the row is 1/32 or less of what is
// compared. Replayed alone, the call is judged by the op rules, row by row.
#include "sim.hpp"

#include <ATen/native/CPUFallback.h>

namespace sim {

namespace {

double planted_error(c10::ScalarType dtype) {
  if (dtype == at::kBFloat16) return 0.035;
  if (dtype == at::kHalf) return 0.0045;
  return 2.5e-4;
}

}  // namespace

std::optional<bool> run_in_network_classes(const c10::OperatorHandle& op, torch::jit::Stack* s) {
  if (planted("weight-grad") && op.schema().operator_name().name == "aten::mm") {
    // `self`, the first argument: the sim receives mm's out= overload (self, mat2, out), so the
    // operand is counted from the start of the arguments, never from the end of the stack.
    const at::Tensor a = (*s)[s->size() - op.schema().arguments().size()].toTensor();
    if (a.dim() != 2 || a.stride(0) != 1 || a.size(0) < 2 || a.size(1) < 2) return std::nullopt;
    at::native::cpu_fallback(op, s);
    const at::Tensor out = s->back().toTensor();
    if (!c10::isFloatingType(out.scalar_type())) return true;
    at::Tensor host = to_host(out).contiguous();
    at::Tensor wide = host.to(at::kFloat);
    const at::Tensor sign = at::arange(wide.numel(), at::kLong).remainder(2).mul(2).sub(1).to(at::kFloat);
    wide.view(-1).mul_(1 + 0.1 * sign);
    host.copy_(wide);
    write_back(out, host);
    return true;
  }
  if (!planted("batch-row") || op.schema().operator_name().name != "aten::addmm") return std::nullopt;
  at::native::cpu_fallback(op, s);
  const at::Tensor out = s->back().toTensor();
  if (!c10::isFloatingType(out.scalar_type()) || out.dim() != 2 || out.size(0) < 32 || out.size(1) < 16) return true;
  at::Tensor host = to_host(out).contiguous();
  at::Tensor wide = host.to(at::kFloat);
  wide.select(0, wide.size(0) - 1).mul_(1 - planted_error(out.scalar_type()));
  host.copy_(wide);
  write_back(out, host);
  return true;
}

}  // namespace sim
