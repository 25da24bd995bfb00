// The sim's scalar-operand class: `cpu-scalar`, mul with a CPU 0-dim tensor beside a sim tensor
// (PyTorch takes one as a scalar operand on any device; pytorch#186580, #187117 and #193057 are MPS
// bugs of that path). No fixed case passes one; `mpscheck explore`'s +cpu layout does.
#include "sim.hpp"

#include <c10/core/TensorImpl.h>

namespace sim {

namespace {

bool is_mul(const c10::OperatorHandle& op) {
  const std::string& name = op.schema().operator_name().name;
  return name == "aten::mul" || name == "aten::mul_";
}

// A tensor the user passed as a 0-dim CPU tensor: not a Python number wrapped into one (x * 2.0),
// which every catalog case's arithmetic makes.
bool is_cpu_scalar(const c10::IValue& v) {
  if (!v.isTensor()) return false;
  const at::Tensor& t = v.toTensor();
  return t.defined() && t.dim() == 0 && t.device().is_cpu() && c10::isFloatingType(t.scalar_type()) &&
         !t.unsafeGetTensorImpl()->is_wrapped_number();
}

bool is_sim(const c10::IValue& v) { return v.isTensor() && v.toTensor().defined() && v.toTensor().is_privateuseone(); }

}  // namespace

std::optional<bool> run_scalar_classes(const c10::OperatorHandle& op, torch::jit::Stack* s) {
  if (!planted("cpu-scalar") || !is_mul(op) || op.schema().arguments().size() < 2) return std::nullopt;
  // A kernel that passes the host scalar to the device as a half, whatever the tensor's dtype: the
  // product is off by the scalar's float16 rounding (up to 2^-11 of it, some 4,000 float32 units).
  const size_t first = s->size() - op.schema().arguments().size();
  for (size_t i : {first, first + 1}) {
    const size_t other = i == first ? first + 1 : first;
    if (!is_cpu_scalar((*s)[i]) || !is_sim((*s)[other])) continue;
    const at::Tensor scalar = (*s)[i].toTensor();
    (*s)[i] = scalar.to(at::kHalf).to(scalar.scalar_type());
    return false;  // the plain kernel, with the rounded scalar
  }
  return std::nullopt;
}

}  // namespace sim
