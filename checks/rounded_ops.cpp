// The rounded-operation baseline (rounded_ops.hpp): a boxed fallback on a dispatch key that sits
// above autograd and that nothing else in mpscheck or LibTorch registers, switched on per thread.
// It runs each operator below itself, then rounds the float32 results in place.
#include "checks/rounded_ops.hpp"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/stack.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <vector>

namespace mpscheck {

namespace {

constexpr c10::DispatchKey kRoundingKey = c10::DispatchKey::TESTING_ONLY_GenericMode;

thread_local c10::ScalarType t_rounding = c10::ScalarType::Undefined;

// A result is rounded through a handle with no autograd history and a version counter of its own,
// so a tensor saved for backward holds the rounded value, as a device's saved result would, and
// is not reported as modified. A view is left alone (its base was rounded when it was made, or is
// an input, rounded by the baseline's rounded inputs), and so is a broadcast, whose elements share
// memory.
void round_in_place(const at::Tensor& t, c10::ScalarType dtype) {
  if (!t.defined() || t.scalar_type() != at::kFloat || t.numel() == 0 || t.is_view() ||
      !t.is_non_overlapping_and_dense())
    return;
  at::Tensor data = t.variable_data();
  data.copy_(data.to(dtype));
}

// The tensors of `values` (a tensor, or a list of them), each rounded.
void round_values(const c10::IValue& v, c10::ScalarType dtype) {
  if (v.isTensor()) {
    round_in_place(v.toTensor(), dtype);
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) round_in_place(t, dtype);
  }
}

// Every result, and every argument the operator writes that it does not return (batch norm's
// running statistics), rounded once the operator is done.
void round_results(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  const auto& arguments = op.schema().arguments();
  const std::size_t returns = op.schema().returns().size();
  std::vector<c10::IValue> written;
  if (stack->size() >= arguments.size()) {
    const std::size_t first = stack->size() - arguments.size();
    for (std::size_t i = 0; i < arguments.size(); ++i)
      if (arguments[i].alias_info() && arguments[i].alias_info()->isWrite()) written.push_back((*stack)[first + i]);
  }
  op.redispatchBoxed(keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kRoundingKey), stack);
  const c10::ScalarType dtype = t_rounding;
  if (dtype == c10::ScalarType::Undefined || stack->size() < returns) return;
  // The rounding's own operators are not rounded again, and record no history.
  const c10::impl::ExcludeDispatchKeyGuard no_rounding(kRoundingKey);
  const at::NoGradGuard no_grad;
  for (std::size_t i = stack->size() - returns; i < stack->size(); ++i) round_values((*stack)[i], dtype);
  for (const c10::IValue& v : written) round_values(v, dtype);
}

}  // namespace

TORCH_LIBRARY_IMPL(_, TESTING_ONLY_GenericMode, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&round_results>());
}

RoundEveryResult::RoundEveryResult(c10::ScalarType dtype)
    : saved_dtype_(t_rounding), saved_included_(c10::impl::tls_is_dispatch_key_included(kRoundingKey)) {
  t_rounding = dtype;
  c10::impl::tls_set_dispatch_key_included(kRoundingKey, true);
}

RoundEveryResult::~RoundEveryResult() {
  c10::impl::tls_set_dispatch_key_included(kRoundingKey, saved_included_);
  t_rounding = saved_dtype_;
}

}  // namespace mpscheck
