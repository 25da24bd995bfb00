#include "dcgan.h"

#include "common.h"

namespace mpscheck::convnets {

namespace nn = torch::nn;

namespace {

nn::ConvTranspose2d up(int64_t in, int64_t out, int64_t stride, int64_t padding) {
  return nn::ConvTranspose2d(nn::ConvTranspose2dOptions(in, out, 4).stride(stride).padding(padding).bias(false));
}
nn::Conv2d down(int64_t in, int64_t out, int64_t stride, int64_t padding) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 4).stride(stride).padding(padding).bias(false));
}
nn::LeakyReLU leaky() { return nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)); }

// The example's weights_init: conv weights N(0, 0.02), BatchNorm weights N(1, 0.02), biases 0.
void dcgan_init(nn::Module& net) {
  torch::NoGradGuard no_grad;
  for (auto& m : net.modules(/*include_self=*/false)) {
    if (auto* c = m->as<nn::Conv2d>()) nn::init::normal_(c->weight, 0.0, 0.02);
    if (auto* c = m->as<nn::ConvTranspose2d>()) nn::init::normal_(c->weight, 0.0, 0.02);
    if (auto* bn = m->as<nn::BatchNorm2d>()) {
      nn::init::normal_(bn->weight, 1.0, 0.02);
      nn::init::zeros_(bn->bias);
    }
  }
}

// Parameters that record no gradient while it lives: G's loss must flow through D without training D.
class FrozenParameters {
 public:
  explicit FrozenParameters(nn::Module& m) : params_(m.parameters()) {
    for (auto& p : params_) p.requires_grad_(false);
  }
  ~FrozenParameters() {
    for (auto& p : params_) p.requires_grad_(true);
  }
  FrozenParameters(const FrozenParameters&) = delete;
  FrozenParameters& operator=(const FrozenParameters&) = delete;

 private:
  std::vector<torch::Tensor> params_;
};

}  // namespace

DcganGeneratorImpl::DcganGeneratorImpl(int64_t nz, int64_t ngf, int64_t nc)
    : main(register_module("main",
                           nn::Sequential(up(nz, ngf * 8, 1, 0), nn::BatchNorm2d(ngf * 8), nn::ReLU(),       // 4x4
                                          up(ngf * 8, ngf * 4, 2, 1), nn::BatchNorm2d(ngf * 4), nn::ReLU(),  // 8x8
                                          up(ngf * 4, ngf * 2, 2, 1), nn::BatchNorm2d(ngf * 2), nn::ReLU(),  // 16x16
                                          up(ngf * 2, ngf, 2, 1), nn::BatchNorm2d(ngf), nn::ReLU(),          // 32x32
                                          up(ngf, nc, 2, 1), nn::Tanh()))) {                                 // 64x64
  dcgan_init(*this);
}

torch::Tensor DcganGeneratorImpl::forward(torch::Tensor z) { return forward_tapped("netG.main", main, z); }

DcganDiscriminatorImpl::DcganDiscriminatorImpl(int64_t ndf, int64_t nc)
    : main(register_module("main",
                           nn::Sequential(down(nc, ndf, 2, 1), leaky(),                                     // 32x32
                                          down(ndf, ndf * 2, 2, 1), nn::BatchNorm2d(ndf * 2), leaky(),      // 16x16
                                          down(ndf * 2, ndf * 4, 2, 1), nn::BatchNorm2d(ndf * 4), leaky(),  // 8x8
                                          down(ndf * 4, ndf * 8, 2, 1), nn::BatchNorm2d(ndf * 8), leaky(),  // 4x4
                                          down(ndf * 8, 1, 1, 0), nn::Sigmoid()))) {
  dcgan_init(*this);
}

torch::Tensor DcganDiscriminatorImpl::forward(torch::Tensor x) { return forward_tapped("netD.main", main, x).view(-1); }

torch::optim::AdamOptions dcgan_adam_options() { return torch::optim::AdamOptions(2e-4).betas({0.5, 0.999}); }

DcganImpl::DcganImpl()
    : netG(register_module("netG", DcganGenerator())), netD(register_module("netD", DcganDiscriminator())) {}

torch::Tensor DcganImpl::forward(const torch::Tensor& real, const torch::Tensor& z) {
  return netD->forward(netG->forward(z));
}

namespace {

// One iteration of the example's training loop. (1) D: maximise log(D(x)) + log(1 - D(G(z))), on
// a detached fake, with D's own Adam. (2) G: maximise log(D(G(z))) through the updated D, whose
// weights must not learn from it, with G's Adam. The first step's gradients are each network's
// before its own update. Returns [errD, errG]: each network's loss, compared apart.
torch::Tensor dcgan_step(const model::Step<Dcgan>& step) {
  Dcgan& net = step.net;
  torch::optim::Optimizer& optimizer_d = *step.optimizers.at(0);
  torch::optim::Optimizer& optimizer_g = *step.optimizers.at(1);
  const torch::Tensor& real = step.batch.inputs.at(0);
  optimizer_d.zero_grad();
  optimizer_g.zero_grad();
  const torch::Tensor fake = net->netG->forward(step.batch.inputs.at(1));
  const torch::Tensor ones = torch::ones({real.size(0)}, real.options());
  const torch::Tensor zeros = torch::zeros({real.size(0)}, real.options());

  const torch::Tensor err_d = torch::binary_cross_entropy(net->netD->forward(real), ones) +
                              torch::binary_cross_entropy(net->netD->forward(fake.detach()), zeros);
  err_d.backward();
  step.record_grads();
  optimizer_d.step();
  optimizer_d.zero_grad();  // D keeps no gradient into G's step, nor into the record of G's gradients

  torch::Tensor scores;
  {
    FrozenParameters frozen(*net->netD);
    scores = net->netD->forward(fake);
  }
  const torch::Tensor err_g = step.def.loss(scores, step.batch);
  err_g.backward();
  step.record_grads();
  optimizer_g.step();
  return torch::stack({err_d.detach(), err_g.detach()});
}

}  // namespace

}  // namespace mpscheck::convnets

MPSCHECK_CATALOG(dcgan_models) {
  using namespace mpscheck;
  model::ModelDef<convnets::Dcgan> def;
  def.name = "dcgan";
  def.tags = {"seed", "gan", "vision", "batchnorm", "conv_transpose"};
  def.build = [](model::Mode) { return convnets::Dcgan(); };
  // Real images scaled to [-1, 1] like the example's Normalize, and the noise z; the example's batch is 64.
  def.batch = [](model::Mode mode, at::Generator& gen) {
    const int64_t n = mode.quick ? 4 : 64;
    return model::Batch{{at::rand({n, 3, 64, 64}, gen, at::kFloat) * 2 - 1, at::randn({n, 100, 1, 1}, gen, at::kFloat)},
                        {}};
  };
  // G's loss: its fakes scored as real (dcgan_step's errG).
  def.loss = [](const at::Tensor& scores, const model::Batch&) {
    return torch::binary_cross_entropy(scores, torch::ones_like(scores));
  };
  // D's Adam, then G's, with the example's options.
  def.optimizers = [](convnets::Dcgan& net) {
    model::Optimizers optimizers;
    optimizers.push_back(std::make_unique<torch::optim::Adam>(net->netD->parameters(), convnets::dcgan_adam_options()));
    optimizers.push_back(std::make_unique<torch::optim::Adam>(net->netG->parameters(), convnets::dcgan_adam_options()));
    return optimizers;
  };
  def.train_step = convnets::dcgan_step;
  def.steps = 3;
  def.quick_steps = 2;
  model::add_model(catalog, def);
}
