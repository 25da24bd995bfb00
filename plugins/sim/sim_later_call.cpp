// The sim's later-call class: `later-call`, kernels that keep a packed copy of their weight operand
// (the right-hand matrix of mm, addmm, bmm and baddbmm, a convolution's weight) keyed by its buffer,
// shape and strides, and reuse it on every later call with that weight. The first call computes
// from the weight itself and is right; the copy was packed with a stale scale, so every later call
// is kLaterCallScale too large. A cache of this kind (compiled graphs, packed weights) is where
// device bugs that show only from the second call on live. A freed buffer is forgotten, as a real
// cache forgets it, so a new tensor that lands at the same address starts fresh.
#include "sim.hpp"

#include <ATen/native/CPUFallback.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace sim {

namespace {

struct PackedWeight {
  std::string kernel;
  const void* buffer;
  std::vector<int64_t> sizes, strides;
  int64_t offset;
  c10::ScalarType dtype;
  bool operator==(const PackedWeight& o) const {
    return kernel == o.kernel && buffer == o.buffer && sizes == o.sizes && strides == o.strides && offset == o.offset &&
           dtype == o.dtype;
  }
};

std::mutex g_packed_mutex;
std::vector<PackedWeight> g_packed;

// The operand a matmul kernel packs: mm's and bmm's second (mat2), addmm's and baddbmm's third.
std::optional<size_t> packed_operand(const c10::OperatorHandle& op) {
  const std::string& name = op.schema().operator_name().name;
  if (name == "aten::mm" || name == "aten::bmm") return 1;
  if (name == "aten::addmm" || name == "aten::baddbmm") return 2;
  return std::nullopt;
}

}  // namespace

bool later_call_reuses(const std::string& kernel, const at::Tensor& weight) {
  static const bool on = planted("later-call");
  if (!on || !weight.defined() || !c10::isFloatingType(weight.scalar_type()) || !weight.has_storage()) return false;
  const PackedWeight key{kernel,
                         weight.storage().data_ptr().get(),
                         weight.sizes().vec(),
                         weight.strides().vec(),
                         weight.storage_offset(),
                         weight.scalar_type()};
  std::lock_guard<std::mutex> lock(g_packed_mutex);
  if (std::find(g_packed.begin(), g_packed.end(), key) != g_packed.end()) return true;
  g_packed.push_back(key);
  return false;
}

void forget_buffer(const void* base) {
  static const bool on = planted("later-call");
  if (!on) return;
  std::lock_guard<std::mutex> lock(g_packed_mutex);
  g_packed.erase(
      std::remove_if(g_packed.begin(), g_packed.end(), [&](const PackedWeight& p) { return p.buffer == base; }),
      g_packed.end());
}

std::optional<bool> run_later_call_class(const c10::OperatorHandle& op, torch::jit::Stack* s) {
  if (!planted("later-call")) return std::nullopt;
  const std::optional<size_t> operand = packed_operand(op);
  if (!operand) return std::nullopt;
  const c10::IValue& weight = (*s)[s->size() - op.schema().arguments().size() + *operand];
  if (!weight.isTensor() || !later_call_reuses(op.schema().operator_name().name, weight.toTensor())) return false;
  at::native::cpu_fallback(op, s);
  const at::Tensor out = s->back().toTensor();
  at::Tensor host = to_host(out).contiguous();
  host.mul_(kLaterCallScale);
  write_back(out, host);
  return true;
}

}  // namespace sim
