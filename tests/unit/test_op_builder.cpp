// The op SDK's family builder: a Family's defaults reach every case, a case's own settings reach
// only that case, and the ids, tags and tolerance family come out as add_op made them by hand.
#include <mpscheck/op.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace mpscheck;
using namespace mpscheck::op;

namespace {

std::vector<std::string> ids(Catalog& catalog) {
  std::vector<std::string> out;
  for (const auto& w : catalog.workloads()) out.push_back(w->id());
  return out;
}

Outputs run_on_cpu(const Workload& w) {
  Setup setup;
  setup.seed = 5;
  return w.instantiate(setup, Placement{})->run();
}

}  // namespace

TEST(OpBuilder, FamilyDefaultsGiveEveryDtypeItsVariantsInOrder) {
  Catalog catalog;
  Family fam(catalog, "fam");
  fam.dtypes(dtypes::floats).variants({Variant::contiguous(), Variant::transposed()}, {Variant::sliced()});
  fam.op(
         "tanh", {Arg::randn("x", {4, 6})}, [](const at::Tensor& x) { return at::tanh(x); }, "torch.tanh(x)")
      .add();
  EXPECT_EQ(ids(catalog),
            (std::vector<std::string>{"op/fam/tanh/f32/contiguous/forward", "op/fam/tanh/f32/contiguous/backward",
                                      "op/fam/tanh/f32/transposed/forward", "op/fam/tanh/f32/transposed/backward",
                                      "op/fam/tanh/f16/sliced/forward", "op/fam/tanh/f16/sliced/backward",
                                      "op/fam/tanh/bf16/sliced/forward", "op/fam/tanh/bf16/sliced/backward"}));
  for (const auto& w : catalog.workloads()) EXPECT_EQ(w->family(), "fam") << w->id();  // tolerance: its own name
}

TEST(OpBuilder, ACaseSettingsStayWithThatCase) {
  Catalog catalog;
  Family fam(catalog, "fam");
  fam.tolerance("activation");
  const Case exp_case = fam.op(
      "exp", {Arg::randn("x", {4})}, [](const at::Tensor& x) { return at::exp(x); }, "torch.exp(x)");
  exp_case.no_grad().tolerance("elementwise").tag("exact").add(dtypes::ints);
  exp_case.add();  // the same case with the family's settings
  const auto& w = catalog.workloads();
  ASSERT_EQ(ids(catalog),
            (std::vector<std::string>{"op/fam/exp/i64/contiguous/forward", "op/fam/exp/i32/contiguous/forward",
                                      "op/fam/exp/f32/contiguous/forward", "op/fam/exp/f32/contiguous/backward"}));
  EXPECT_EQ(w[0]->family(), "elementwise");
  EXPECT_EQ(w[0]->tags().front(), "exact");
  EXPECT_EQ(w[2]->family(), "activation");
  EXPECT_EQ(w[2]->tags(), (std::vector<std::string>{"fam", "forward"}));
}

TEST(OpBuilder, LargeCasesAreTaggedAndNamedLarge) {
  Catalog catalog;
  Family fam(catalog, "fam");
  fam.variants({Variant::contiguous(), Variant::transposed()});
  fam.op(
         "sum", {Arg::randn("x", {8, 8})}, [](const at::Tensor& x) { return x.sum(); }, "x.sum()")
      .no_grad()
      .large()
      .add();
  ASSERT_EQ(ids(catalog), std::vector<std::string>{"op/fam/sum/f32/large/forward"});
  EXPECT_EQ(catalog.workloads()[0]->tags(), (std::vector<std::string>{"large", "fam", "forward", "noncontiguous"}));
}

TEST(OpBuilder, AnOpMayTakeTheFirstArgOrAllArgsAndGiveOneTensorOrSeveral) {
  Catalog catalog;
  Family fam(catalog, "fam");
  fam.no_grad();
  const std::vector<Arg> args = {Arg::randn("a", {3}), Arg::randn("b", {3})};
  fam.op(
         "first", args, [](const at::Tensor& a) { return a * 2; }, "a * 2")
      .add();
  fam.op(
         "one", args, [](const Tensors& t) { return t[0] + t[1]; }, "a + b")
      .add();
  fam.op(
         "two", args,
         [](const Tensors& t) {
           return Tensors{t[0], t[1]};
         },
         "(a, b)")
      .add();
  const auto& w = catalog.workloads();
  ASSERT_EQ(w.size(), 3u);
  const Outputs two = run_on_cpu(*w[2]);
  ASSERT_EQ(two.size(), 2u);
  const at::Tensor a = two[0].value, b = two[1].value;
  const Outputs first = run_on_cpu(*w[0]), one = run_on_cpu(*w[1]);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(at::equal(first[0].value, a * 2));
  EXPECT_TRUE(at::equal(one[0].value, a + b));
}

TEST(OpBuilder, PrepareRewritesEveryCaseArgsBeforeItsVariants) {
  Catalog catalog;
  Family fam(catalog, "fam");
  fam.prepare([](std::vector<Arg>& args) { args.push_back(Arg::uniform("w", {4}, 2, 3)); });
  fam.op(
         "scale", {Arg::randn("x", {4})}, [](const Tensors& a) { return a[0] * a[1]; }, "x * w")
      .no_grad()
      .add();
  ASSERT_EQ(catalog.workloads().size(), 1u);
  const auto& def = dynamic_cast<const OpWorkload&>(*catalog.workloads()[0]).def();
  ASSERT_EQ(def.args.size(), 2u);
  EXPECT_EQ(def.args[1].name, "w");
  EXPECT_EQ(def.args[1].lo, 2);
}

// explore's +cpu layout (InputLayout::CpuScalar): the input becomes a 0-dim tensor drawn like the
// arg, which stays on the CPU on every side, the target's too; only a floating input can be one.
TEST(OpBuilder, ACpuScalarInputIsZeroDimAndStaysOnTheCpu) {
  Catalog catalog;
  Family fam(catalog, "fam");
  fam.op(
         "mul", {Arg::randn("a", {4, 6}), Arg::randn("b", {4, 6}), Arg::mask("m", {4, 6})},
         [](const Tensors& t) { return at::mul(t[0], t[1]); }, "torch.mul(a, b)")
      .add(dtypes::f32);
  const Workload& w = *catalog.workloads().front();
  const std::vector<InputShape> shapes = w.input_shapes();
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_TRUE(shapes[0].floating);
  EXPECT_FALSE(shapes[2].floating);
  std::vector<InputVariant> in = {
      {{4, 6}, InputLayout::Declared, 0}, {{}, InputLayout::CpuScalar, 0}, {{4, 6}, InputLayout::Declared, 0}};
  const auto varied = w.with_inputs(in);
  ASSERT_TRUE(varied);
  EXPECT_EQ(varied->input_shapes()[1].layout, "cpu_scalar");
  EXPECT_TRUE(varied->input_shapes()[1].shape.empty());
  Placement target;
  target.device = c10::Device(c10::kMeta);
  target.side = Side::Target;
  const Outputs out = varied->instantiate(mpscheck::Setup{5, false}, target)->run();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].value.device().type(), c10::kMeta);  // a on the device, b a CPU scalar beside it
  EXPECT_EQ(out[0].value.sizes(), (c10::IntArrayRef{4, 6}));
  // On the CPU: a times b's own draw (a 0-dim draw from the same generator, after a's).
  at::Generator gen = at::detail::createCPUGenerator(5);
  const at::Tensor a = at::randn({4, 6}, gen, at::kFloat), b = at::randn({}, gen, at::kFloat);
  EXPECT_TRUE(at::equal(run_on_cpu(*varied)[0].value, a * b));
  EXPECT_NE(varied->reproducer({}).find(
                "base = torch.tensor((torch.randn([], generator=gen)).item(), dtype=dtype)  # stays on the CPU"),
            std::string::npos)
      << varied->reproducer({});
  in[1] = {{4, 6}, InputLayout::Declared, 0};
  in[2] = {{}, InputLayout::CpuScalar, 0};
  EXPECT_FALSE(w.with_inputs(in));  // the mask is no floating scalar
}
