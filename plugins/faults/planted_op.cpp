// A catalog op with a planted wrong result on the target side: the same OpDef machinery as the
// real op plugins (seeded args, layouts, forward and backward cases, tolerance family, float64
// gold, Python reproducer), with one element of the first output moved by a known amount, so a
// test can check the catalog names it `mismatch` with exactly that max error and blames the target.
#include <mpscheck/op.hpp>

namespace {

using namespace mpscheck;
using namespace mpscheck::op;

// Element 5 of the first output (forward: the result; backward: grad/x) is off by this much.
constexpr double kPlantedError = 0.25;
constexpr int64_t kPlantedElement = 5;

class PlantedInstance final : public Instance {
 public:
  PlantedInstance(std::unique_ptr<Instance> inner, bool target) : inner_(std::move(inner)), target_(target) {}
  Outputs run() override {
    Outputs out = inner_->run();
    if (target_ && !out.empty()) {
      at::Tensor t = out[0].value.clone();
      t.view(-1)[kPlantedElement] += kPlantedError;
      out[0].value = t;
    }
    return out;
  }
  void iterate() override { inner_->iterate(); }

 private:
  std::unique_ptr<Instance> inner_;
  bool target_;
};

// Everything but the instance comes from the wrapped catalog workload.
class PlantedWorkload final : public Workload {
 public:
  explicit PlantedWorkload(std::unique_ptr<Workload> inner) : inner_(std::move(inner)) {}
  std::string id() const override { return inner_->id(); }
  Kind kind() const override { return inner_->kind(); }
  std::vector<std::string> tags() const override {
    auto t = inner_->tags();
    t.push_back("test-only");
    return t;
  }
  std::string family() const override { return inner_->family(); }
  c10::ScalarType dtype() const override { return inner_->dtype(); }
  bool has_gold() const override { return inner_->has_gold(); }
  bool is_random() const override { return inner_->is_random(); }
  std::unique_ptr<Instance> instantiate(const Setup& setup, const Placement& where) const override {
    return std::make_unique<PlantedInstance>(inner_->instantiate(setup, where), where.side == Side::Target);
  }
  std::string reproducer(const ReproTarget& target) const override { return inner_->reproducer(target); }

 private:
  std::unique_ptr<Workload> inner_;
};

}  // namespace

MPSCHECK_CATALOG(planted_op_cases) {
  OpDef d;
  d.family = "faults";
  d.op = "linear_planted";
  d.args = {Arg::randn("x", {16, 64}), Arg::randn("w", {32, 64}), Arg::randn("b", {32})};
  d.fn = [](const Tensors& a) { return Tensors{at::linear(a[0], a[1], a[2])}; };
  d.python = "torch.nn.functional.linear(x, w, b)";
  d.tolerance = "linalg";
  Catalog wrapped;
  add_op(wrapped, d, {c10::kFloat}, {Variant::contiguous(), Variant::transposed()});
  for (auto& w : wrapped.workloads()) catalog.add(std::make_unique<PlantedWorkload>(std::move(w)));
}
