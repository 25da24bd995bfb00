// DCGAN from pytorch/examples (dcgan/main.py): 64x64x3 images, nz=100, ngf=ndf=64.
// One model holds both networks so that one training case is one GAN step, D then G, as in the
// example (see DcganImpl::forward).
#pragma once

#include <torch/torch.h>

#include <memory>

namespace mpscheck::vision {

struct DcganGeneratorImpl : torch::nn::Module {
  explicit DcganGeneratorImpl(int64_t nz = 100, int64_t ngf = 64, int64_t nc = 3);
  torch::Tensor forward(torch::Tensor z);

  torch::nn::Sequential main;
};
TORCH_MODULE(DcganGenerator);

struct DcganDiscriminatorImpl : torch::nn::Module {
  explicit DcganDiscriminatorImpl(int64_t ndf = 64, int64_t nc = 3);
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Sequential main;
};
TORCH_MODULE(DcganDiscriminator);

struct DcganImpl : torch::nn::Module {
  DcganImpl();
  // Returns [D(G(z)) per sample | D's loss]. In training with grad enabled it first takes the
  // discriminator's own Adam step (real vs detached fake), then scores G(z) through the updated,
  // frozen D, so the case's optimizer (which then only sees G's gradients) trains G.
  torch::Tensor forward(torch::Tensor real, torch::Tensor z);

  DcganGenerator netG;
  DcganDiscriminator netD;
  std::unique_ptr<torch::optim::Adam> optimizerD;  // made on first training step, after the move to the device
};
TORCH_MODULE(Dcgan);

torch::optim::AdamOptions dcgan_adam_options();

}  // namespace mpscheck::vision
