#include "mnist_net.h"

#include <mpscheck/model.hpp>

namespace mpscheck::mnist {

MnistNetImpl::MnistNetImpl()
    : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3).stride(1)))),
      conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).stride(1)))),
      dropout1(register_module("dropout1", torch::nn::Dropout(0.25))),
      dropout2(register_module("dropout2", torch::nn::Dropout(0.5))),
      fc1(register_module("fc1", torch::nn::Linear(9216, 128))),
      fc2(register_module("fc2", torch::nn::Linear(128, 10))) {}

torch::Tensor MnistNetImpl::forward(torch::Tensor x) {
  using model::tap;
  x = torch::relu(tap("conv1", conv1->forward(x)));
  x = torch::relu(tap("conv2", conv2->forward(x)));
  x = dropout1->forward(torch::max_pool2d(x, 2)).flatten(1);
  x = dropout2->forward(torch::relu(tap("fc1", fc1->forward(x))));
  return tap("log_softmax", torch::log_softmax(tap("fc2", fc2->forward(x)), 1));
}

Adadelta::Adadelta(std::vector<torch::Tensor> params, AdadeltaOptions options)
    : Optimizer({torch::optim::OptimizerParamGroup(std::move(params))}, std::make_unique<AdadeltaOptions>(options)) {}

// torch.optim.Adadelta's update, parameter by parameter.
torch::Tensor Adadelta::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const AdadeltaOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      torch::Tensor grad = p.grad();
      if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
      auto& acc = accumulators_[p.unsafeGetTensorImpl()];
      if (!acc.square_avg.defined()) {
        acc.square_avg = torch::zeros_like(p);
        acc.acc_delta = torch::zeros_like(p);
      }
      acc.square_avg.mul_(o.rho()).addcmul_(grad, grad, 1 - o.rho());
      torch::Tensor rms = acc.square_avg.add(o.eps()).sqrt_();
      torch::Tensor delta = acc.acc_delta.add(o.eps()).sqrt_().div_(rms).mul_(grad);
      acc.acc_delta.mul_(o.rho()).addcmul_(delta, delta, 1 - o.rho());
      p.add_(delta, -o.lr());
    }
  }
  return loss;
}

}  // namespace mpscheck::mnist

MPSCHECK_CATALOG(mnist_net_models) {
  using namespace mpscheck;
  // The example's training batch is 64.
  auto def = model::image_classifier<mnist::MnistNet>(
      "mnist_net", {"seed", "cnn", "mnist", "vision"}, [](model::Mode) { return mnist::MnistNet(); },
      model::mnist_images(64));
  // The network ends in log_softmax, so the example's loss is the negative log-likelihood.
  def.loss = [](const at::Tensor& out, const model::Batch& b) { return torch::nll_loss(out, b.target); };
  def.optimizer = model::optimizer<mnist::Adadelta>(mnist::AdadeltaOptions(1.0));
  model::add_model(catalog, def);
}
