#include "mlp.h"

#include <mpscheck/model.hpp>

namespace mpscheck::mlp {

MlpImpl::MlpImpl(std::vector<int64_t> widths) : layers(register_module("layers", torch::nn::ModuleList())) {
  for (size_t i = 0; i + 1 < widths.size(); ++i) layers->push_back(torch::nn::Linear(widths[i], widths[i + 1]));
}

torch::Tensor MlpImpl::forward(torch::Tensor x) {
  for (size_t i = 0; i < layers->size(); ++i) {
    torch::nn::Linear linear(layers->ptr<torch::nn::LinearImpl>(i));
    x = model::layer("layers." + std::to_string(i), linear, x);
    if (i + 1 < layers->size()) x = torch::relu(x);
  }
  return x;
}

}  // namespace mpscheck::mlp

MPSCHECK_CATALOG(mlp_models) {
  using namespace mpscheck;
  model::ModelDef<mlp::Mlp> def;
  def.name = "mlp";
  def.tags = {"seed", "mlp"};
  def.build = [](model::Mode) { return mlp::Mlp(); };
  // The report's input: randn(1024, 1024); the loss is the mean of the output.
  def.batch = [](model::Mode mode, at::Generator& gen) {
    return model::Batch{{at::randn({mode.quick ? 64 : 1024, 1024}, gen, at::kFloat)}, {}};
  };
  def.loss = [](const at::Tensor& out, const model::Batch&) { return out.mean(); };
  def.optimizer = model::optimizer<torch::optim::SGD>(torch::optim::SGDOptions(0.01));
  model::add_model(catalog, def);
}
