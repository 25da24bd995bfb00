// A small model whose target side goes wrong inside one named layer ("fc2"), for the test that
// failing model cases are localised to the layer that diverges first.
#include <mpscheck/plugin.hpp>

namespace {

using namespace mpscheck;

class FaultyMlpInstance final : public Instance {
 public:
  // A rounded baseline (float16/bfloat16 targets) gets its weights, input and every layer's output
  // rounded to that dtype, as the model SDK does it.
  FaultyMlpInstance(const Setup& setup, const Placement& where)
      : planted_(where.side == Side::Target), round_(where.round_inputs_to) {
    at::Generator gen = at::detail::createCPUGenerator(setup.seed);
    for (auto [in, out] : {std::pair<int64_t, int64_t>{32, 64}, {64, 64}, {64, 8}})
      weights_.push_back(rounded(at::randn({out, in}, gen, at::kFloat) / std::sqrt(static_cast<double>(in)))
                             .to(where.device, where.dtype));
    x_ = rounded(at::randn({16, 32}, gen, at::kFloat)).to(where.device, where.dtype);
  }

  Outputs run() override { return {{"out", forward(nullptr)}}; }
  Outputs trace_layers() override {
    Outputs layers;
    forward(&layers);
    return layers;
  }
  // Each layer is one linear op: its input and weight, for the op-level reproducer.
  LayerCall layer_call(const std::string& layer, int call) override {
    LayerCall c;
    for (size_t i = 0; i < weights_.size(); ++i) {
      if (layer != kNames[i] || call != 0) continue;
      c.python = "torch.nn.functional.linear(x, weight)";
      c.tensors = {{"x", input_of(i).clone()}, {"weight", weights_[i].clone()}};
      return c;
    }
    c.missing = "the forward pass has no call " + std::to_string(call + 1) + " of layer " + layer;
    return c;
  }

 private:
  static constexpr const char* kNames[] = {"fc1", "fc2", "fc3"};

  // The input layer `upto` receives: the pass before it, as forward() runs it.
  at::Tensor input_of(size_t upto) const {
    at::Tensor h = x_;
    for (size_t i = 0; i < upto; ++i) {
      h = at::matmul(h, weights_[i].t());
      if (planted_ && i == 1) h = h + 0.05;
      h = at::relu(rounded(h));
    }
    return h;
  }

  at::Tensor forward(Outputs* trace) const {
    at::Tensor h = x_;
    for (size_t i = 0; i < weights_.size(); ++i) {
      h = at::matmul(h, weights_[i].t());
      if (planted_ && i == 1) h = h + 0.05;  // the planted bug: a biased fc2 kernel
      h = rounded(h);
      if (trace) trace->push_back({kNames[i], h.clone()});
      if (i + 1 < weights_.size()) h = at::relu(h);
    }
    return h;
  }

  at::Tensor rounded(const at::Tensor& t) const {
    return round_ == c10::ScalarType::Undefined ? t : t.to(round_).to(t.scalar_type());
  }

  bool planted_;
  c10::ScalarType round_;
  std::vector<at::Tensor> weights_;
  at::Tensor x_;
};

class FaultyMlp final : public Workload {
 public:
  std::string id() const override { return "model/faults/planted_fc2/infer"; }
  Kind kind() const override { return Kind::Model; }
  std::vector<std::string> tags() const override { return {"faults", "test-only", "infer"}; }
  std::string family() const override { return "model"; }
  std::unique_ptr<Instance> instantiate(const Setup& setup, const Placement& where) const override {
    return std::make_unique<FaultyMlpInstance>(setup, where);
  }
};

}  // namespace

MPSCHECK_CATALOG(faulty_models) { catalog.add(std::make_unique<FaultyMlp>()); }
