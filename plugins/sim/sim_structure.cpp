// The sim's structured-error classes (issue 47): a matmul (mm, addmm, bmm, baddbmm: every Linear,
// attention product and recurrent gate) right everywhere but on one part of its output, by an
// amount near what the reduced-precision rules allow a single element:
//  - slice: the last row of the output (the last batch item of a Linear) low;
//  - block: one contiguous tile in memory order, 1/32 of the output (64 elements at least) from 3/8 on, high;
//  - magnitude: the elements below a quarter of the output's RMS too large by a factor.
// Each is planted at about ten units of the dtype's rounding (bfloat16 4%, float16 0.5%) and, in
// float32, at a few times the matmul family's plain tolerance (1e-4).
#include "sim.hpp"

#include <ATen/native/CPUFallback.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace sim {

namespace {

bool is_op(const c10::OperatorHandle& op, const char* name) { return op.schema().operator_name().name == name; }

bool is_matmul_op(const c10::OperatorHandle& op) {
  return is_op(op, "aten::mm") || is_op(op, "aten::addmm") || is_op(op, "aten::bmm") || is_op(op, "aten::baddbmm");
}

// The relative size of a plant in `dtype`: about ten units of its rounding, or 3e-4 in float32.
double planted_error(c10::ScalarType dtype) {
  if (dtype == at::kBFloat16) return 0.04;
  if (dtype == at::kHalf) return 0.005;
  return 3e-4;
}

// The edit each class makes to a matmul's output, on the host, in float32.
void edit(const char* bug, at::Tensor& out) {
  const double e = planted_error(out.scalar_type());
  at::Tensor wide = out.to(at::kFloat);
  if (std::string(bug) == "slice") {
    wide.select(-2, wide.size(-2) - 1).mul_(1 - e);
  } else if (std::string(bug) == "block") {
    const int64_t n = wide.numel();
    const int64_t length = std::min<int64_t>(n, std::max<int64_t>(64, n / 32));
    wide.view(-1).narrow(0, std::min(3 * n / 8, n - length), length).mul_(1 + e);
  } else {
    const double rms = std::sqrt(wide.square().mean().item<double>());
    wide.copy_(at::where(wide.abs() < 0.25 * rms, wide * (1 + 1.5 * e), wide));
  }
  out.copy_(wide);
}

}  // namespace

std::optional<bool> run_structure_classes(const c10::OperatorHandle& op, torch::jit::Stack* s) {
  const char* bug = planted("slice") ? "slice" : planted("block") ? "block" : planted("magnitude") ? "magnitude" : "";
  if (!*bug || !is_matmul_op(op)) return std::nullopt;
  at::native::cpu_fallback(op, s);
  const at::Tensor out = s->back().toTensor();
  // A kernel path for outputs of rows of 16 and more and 256 elements: the device probe's 4x4 product is right.
  if (!c10::isFloatingType(out.scalar_type()) || out.dim() < 2 || out.size(-2) < 2 || out.size(-1) < 16 ||
      out.numel() < 256)
    return true;
  at::Tensor host = to_host(out).contiguous();
  edit(bug, host);
  write_back(out, host);
  return true;
}

}  // namespace sim
