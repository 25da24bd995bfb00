// The sim's training-state plants. Which tensors are a model's parameters, for the train-step plant
// (sim_bugs.cpp): the optimizer updates a parameter in place, itself (Adam, AdamW, Adadelta) or
// through `p.data()` (SGD), which shares the parameter's storage but no longer requires grad. So a
// parameter is known by its storage, noted whenever a leaf tensor that requires grad is a kernel's
// operand. And batch norm, whose running statistics only eval mode reads.
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

// native_batch_norm's running statistics are `Tensor?` without an alias annotation, so PyTorch's
// CPU fallback, which copies back only the arguments a schema marks as written, drops their update:
// on the plain fallback the sim's batch norm never moved its running mean and variance (found when
// training state was first compared). The sim runs the CPU kernel on host copies and writes the
// statistics back. bn-stats plants a kernel that moves them 10% short of where the momentum puts
// them (0.09 for 0.1): every output, loss and gradient of the step is right, and a network trained
// on it predicts in eval mode from statistics that lag its data.
void native_batch_norm(const c10::OperatorHandle& op, torch::jit::Stack* s) {
  KernelScope kernel;
  const size_t first = s->size() - op.schema().arguments().size();
  auto tensor = [&](size_t i) { return (*s)[first + i].isTensor() ? (*s)[first + i].toTensor() : at::Tensor(); };
  auto host = [](const at::Tensor& t) { return t.defined() ? std::optional<at::Tensor>(to_host(t)) : std::nullopt; };
  const at::Tensor input = tensor(0), running_mean = tensor(3), running_var = tensor(4);
  const bool training = (*s)[first + 5].toBool();
  std::optional<at::Tensor> mean = host(running_mean), var = host(running_var);
  const std::optional<at::Tensor> mean_before = mean ? std::optional<at::Tensor>(mean->clone()) : std::nullopt;
  const std::optional<at::Tensor> var_before = var ? std::optional<at::Tensor>(var->clone()) : std::nullopt;
  auto [out, save_mean, save_invstd] =
      at::native_batch_norm(to_host(input), host(tensor(1)), host(tensor(2)), mean, var, training,
                            (*s)[first + 6].toDouble(), (*s)[first + 7].toDouble());
  // (layer norm's composite runs batch norm with no running statistics at all)
  auto update = [](const at::Tensor& stat, const std::optional<at::Tensor>& before,
                   const std::optional<at::Tensor>& after) {
    if (!stat.defined() || !before || !after) return;
    if (!planted("bn-stats")) return write_back(stat, *after);
    const at::Tensor from = before->to(at::kFloat);
    write_back(stat, (from + 0.9 * (after->to(at::kFloat) - from)).to(after->scalar_type()));
  };
  if (training) {
    update(running_mean, mean_before, mean);
    update(running_var, var_before, var);
  }
  torch::jit::drop(*s, op.schema().arguments().size());
  s->emplace_back(out.to(input.device()));
  s->emplace_back(save_mean.to(input.device()));
  s->emplace_back(save_invstd.to(input.device()));
}

}  // namespace sim
