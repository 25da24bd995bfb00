// Which tensors are a model's parameters, for the train-step plant (sim_bugs.cpp): the optimizer
// updates a parameter in place, itself (Adam, AdamW, Adadelta) or through `p.data()` (SGD), which
// shares the parameter's storage but no longer requires grad. So a parameter is known by its
// storage, noted whenever a leaf tensor that requires grad is a kernel's operand.
#include "sim.hpp"

#include <map>
#include <mutex>

namespace sim {

namespace {

// Each entry is a weak reference: it keeps the storage's address from being reused while it is
// remembered, and says when the parameter is gone.
class ParameterStorages {
 public:
  void note(const at::Tensor& t) {
    if (!t.defined() || !t.requires_grad() || !t.is_leaf() || !t.has_storage()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const c10::StorageImpl* key = t.storage().unsafeGetStorageImpl();
    if (seen_.count(key)) return;
    if (seen_.size() >= kPruneAt) prune();
    seen_.emplace(key, t.storage().getWeakStorageImpl());
  }
  bool holds(const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = seen_.find(t.storage().unsafeGetStorageImpl());
    return it != seen_.end() && !it->second.expired();
  }

 private:
  static constexpr std::size_t kPruneAt = 4096;
  void prune() {
    for (auto it = seen_.begin(); it != seen_.end();) it = it->second.expired() ? seen_.erase(it) : std::next(it);
  }
  std::mutex mutex_;
  std::map<const c10::StorageImpl*, c10::weak_intrusive_ptr<c10::StorageImpl>> seen_;
};

ParameterStorages& parameter_storages() {
  static ParameterStorages* storages = new ParameterStorages;  // never destroyed: kernels may run at exit
  return *storages;
}

}  // namespace

void note_parameter(const c10::IValue& operand) {
  if (!planted("train-step")) return;
  if (operand.isTensor()) parameter_storages().note(operand.toTensor());
  if (operand.isTensorList())
    for (const at::Tensor& t : operand.toTensorVector()) parameter_storages().note(t);
}

bool is_parameter(const at::Tensor& t) {
  return t.defined() && ((t.requires_grad() && t.is_leaf()) || parameter_storages().holds(t));
}

}  // namespace sim
