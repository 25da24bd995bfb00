// PyTorch's MNIST example (pytorch/examples mnist/main.py): the mnist_net row of the seed reports.
// Conv(1->32,k3) -> ReLU -> Conv(32->64,k3) -> ReLU -> max_pool(2) -> Dropout(0.25) -> flatten
//   -> Linear(9216->128) -> ReLU -> Dropout(0.5) -> Linear(128->10) -> log_softmax
#pragma once

#include <torch/torch.h>

#include <map>
#include <vector>

namespace mpscheck::mnist {

struct MnistNetImpl : torch::nn::Module {
  MnistNetImpl();
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Conv2d conv1, conv2;
  torch::nn::Dropout dropout1, dropout2;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(MnistNet);

// The example trains with Adadelta, which the LibTorch C++ frontend does not ship.
struct AdadeltaOptions : torch::optim::OptimizerCloneableOptions<AdadeltaOptions> {
  AdadeltaOptions(double lr = 1.0) : lr_(lr) {}  // NOLINT(google-explicit-constructor)
  TORCH_ARG(double, lr) = 1.0;
  TORCH_ARG(double, rho) = 0.9;
  TORCH_ARG(double, eps) = 1e-6;
  TORCH_ARG(double, weight_decay) = 0;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

class Adadelta : public torch::optim::Optimizer {
 public:
  Adadelta(std::vector<torch::Tensor> params, AdadeltaOptions options);
  torch::Tensor step(LossClosure closure = nullptr) override;

 private:
  struct Accumulators {
    torch::Tensor square_avg, acc_delta;
  };
  std::map<const void*, Accumulators> accumulators_;  // per parameter, keyed by its TensorImpl
};

}  // namespace mpscheck::mnist
