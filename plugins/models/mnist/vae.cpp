#include "vae.h"

#include <mpscheck/model.hpp>

namespace mpscheck::mnist {

VaeImpl::VaeImpl()
    : fc1(register_module("fc1", torch::nn::Linear(kPixels, 400))),
      fc21(register_module("fc21", torch::nn::Linear(400, kLatent))),
      fc22(register_module("fc22", torch::nn::Linear(400, kLatent))),
      fc3(register_module("fc3", torch::nn::Linear(kLatent, 400))),
      fc4(register_module("fc4", torch::nn::Linear(400, kPixels))) {}

torch::Tensor VaeImpl::forward(torch::Tensor x, torch::Tensor eps) {
  using model::tap;
  torch::Tensor h1 = torch::relu(tap("fc1", fc1->forward(x.view({-1, kPixels}))));
  torch::Tensor mu = tap("fc21", fc21->forward(h1));
  torch::Tensor logvar = tap("fc22", fc22->forward(h1));
  // The example reparameterises in eval mode too; only the noise comes from outside.
  torch::Tensor z = tap("reparameterize", mu + eps * torch::exp(0.5 * logvar));
  torch::Tensor h3 = torch::relu(tap("fc3", fc3->forward(z)));
  torch::Tensor recon = torch::sigmoid(tap("fc4", fc4->forward(h3)));
  return torch::cat({recon, mu, logvar}, 1);
}

}  // namespace mpscheck::mnist

MPSCHECK_CATALOG(vae_models) {
  using namespace mpscheck;
  model::ModelDef<mnist::Vae> def;
  def.name = "vae";
  def.tags = {"seed", "vae", "mnist", "vision"};
  def.build = [](model::Mode) { return mnist::Vae(); };
  // inputs: MNIST-shaped pixels in [0,1) and the reparameterisation noise; batch 128 as in the example.
  def.batch = [](model::Mode mode, at::Generator& gen) {
    const int64_t n = mode.quick ? 16 : 128;
    return model::Batch{
        {at::rand({n, 1, 28, 28}, gen, at::kFloat), at::randn({n, mnist::VaeImpl::kLatent}, gen, at::kFloat)}, {}};
  };
  // BCE(recon, x, sum) + KLD, as in the example's loss_function.
  def.loss = [](const at::Tensor& out, const model::Batch& b) {
    const int64_t pixels = b.inputs[0][0].numel();
    torch::Tensor recon = out.narrow(1, 0, pixels);
    torch::Tensor mu = out.narrow(1, pixels, mnist::VaeImpl::kLatent);
    torch::Tensor logvar = out.narrow(1, pixels + mnist::VaeImpl::kLatent, mnist::VaeImpl::kLatent);
    torch::Tensor bce = torch::binary_cross_entropy(recon, b.inputs[0].view({-1, pixels}), {}, at::Reduction::Sum);
    torch::Tensor kld = -0.5 * torch::sum(1 + logvar - mu.pow(2) - logvar.exp());
    return bce + kld;
  };
  def.optimizer = model::optimizer<torch::optim::Adam>(torch::optim::AdamOptions(1e-3));
  // The report's failure grew over several steps: a single step would pass it.
  def.steps = 6;
  def.quick_steps = 3;
  model::add_model(catalog, def);
}
