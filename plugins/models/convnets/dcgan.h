// DCGAN from pytorch/examples (dcgan/main.py): 64x64x3 images, nz=100, ngf=ndf=64.
// One model holds both networks so that one training case steps both, D then G, as in the
// example; the step is the def's train_step (dcgan.cpp), not the forward pass.
#pragma once

#include <torch/torch.h>

namespace mpscheck::convnets {

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
  // D(G(z)) per sample: the discriminator's score of the generated images. `real` is unused here
  // (the training step scores it); it is in the signature so the forward takes the batch's inputs.
  torch::Tensor forward(const torch::Tensor& real, const torch::Tensor& z);

  DcganGenerator netG;
  DcganDiscriminator netD;
};
TORCH_MODULE(Dcgan);

torch::optim::AdamOptions dcgan_adam_options();

}  // namespace mpscheck::convnets
