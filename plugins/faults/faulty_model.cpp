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

 private:
  at::Tensor forward(Outputs* trace) const {
    static const char* const kNames[] = {"fc1", "fc2", "fc3"};
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
