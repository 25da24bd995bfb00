// The explorer's search on a fake runner (no worker, no device): which sizes it tries, how it shrinks
// a failure and where its bisection lands, and the variant ids it makes and resolves.
#include "core/case_variant.hpp"
#include "core/explore.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <sstream>

using namespace mpscheck;

namespace {

// An op-like case whose inputs are declared and can be remade at other sizes; it never runs here.
class ShapedCase final : public Workload {
 public:
  ShapedCase(std::string id, std::vector<InputShape> inputs) : id_(std::move(id)), inputs_(std::move(inputs)) {}
  std::string id() const override { return id_; }
  Kind kind() const override { return Kind::Op; }
  std::unique_ptr<Instance> instantiate(const Setup&, const Placement&) const override { return nullptr; }
  std::vector<InputShape> input_shapes() const override { return inputs_; }
  std::unique_ptr<Workload> with_input_shapes(const std::vector<Shape>& shapes) const override {
    std::vector<InputShape> in = inputs_;
    for (size_t i = 0; i < in.size(); ++i) in[i].shape = shapes[i];
    return std::make_unique<ShapedCase>(id_, in);
  }

 private:
  std::string id_;
  std::vector<InputShape> inputs_;
};

const PluginInfo* no_plugin() { return nullptr; }

// The sizes a variant id gives its inputs, by name (the declared ones where it names none).
std::map<std::string, Shape> shapes_of(const std::string& id, const std::vector<InputShape>& declared) {
  std::map<std::string, Shape> s;
  for (const auto& d : declared) s[d.name] = d.shape;
  if (auto v = parse_variant_id(id))
    for (const auto& [name, shape] : v->shapes) s[name] = shape;
  return s;
}

ExploreOutcome explore_with(const ShapedCase& c, const std::function<bool(const std::map<std::string, Shape>&)>& wrong,
                            int* runs = nullptr) {
  const RunCase run = [&](const std::string& id) {
    if (runs) ++*runs;
    CaseResult r;
    r.id = id;
    r.status = wrong(shapes_of(id, c.input_shapes())) ? Status::Mismatch : Status::Pass;
    r.message = r.status == Status::Mismatch ? "1 of N elements differ" : "";
    return r;
  };
  std::ostringstream log;
  return explore_cases({{&c, no_plugin()}}, {}, run, ExploreOptions{}, log);
}

}  // namespace

TEST(Explore, AThresholdInASharedDimensionIsBisectedExactlyAndTheRestShrunk) {
  const ShapedCase mm("op/linalg/mm/f32/contiguous/forward", {{"a", {24, 40}}, {"b", {40, 16}}});
  const auto out = explore_with(mm, [](const auto& s) { return s.at("a")[1] >= 10000; });
  ASSERT_EQ(out.findings.size(), 1u);
  const ExploreFinding& f = out.findings[0];
  EXPECT_EQ(f.id, "op/linalg/mm/f32/contiguous/forward@a=1x10000,b=10000x1");
  EXPECT_EQ(f.dimension, "a[1]=b[0]");
  EXPECT_EQ(f.first_failing, 10000);
  EXPECT_EQ(f.last_passing, 9999);
  EXPECT_EQ(f.pattern, "from");
}

TEST(Explore, APowerOfTwoOnlyFailureIsNamedSo) {
  const ShapedCase softplus("op/activation/softplus/f32/contiguous/forward", {{"x", {64, 96}}});
  const auto out = explore_with(softplus, [](const auto& s) {
    const int64_t n = s.at("x")[1];
    return n >= 2048 && (n & (n - 1)) == 0;
  });
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].id, "op/activation/softplus/f32/contiguous/forward@x=1x2048");
  EXPECT_EQ(out.findings[0].first_failing, 2048);
  EXPECT_EQ(out.findings[0].last_passing, 2047);
  EXPECT_EQ(out.findings[0].pattern, "powers-of-two");
}

TEST(Explore, AFailureAtSmallSizesIsBisectedUpward) {
  const ShapedCase c("op/x/y/f32/contiguous/forward", {{"x", {64, 96}}});
  const auto out = explore_with(c, [](const auto& s) { return s.at("x")[0] <= 3; });
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].pattern, "up-to");
  EXPECT_EQ(out.findings[0].first_failing, 3);
  EXPECT_EQ(out.findings[0].last_passing, 4);
}

TEST(Explore, NoFailureNoFindingAndTheSameVariantsForTheSameSeed) {
  const ShapedCase mm("op/linalg/mm/f32/contiguous/forward", {{"a", {24, 40}}, {"b", {40, 16}}});
  int first = 0, second = 0;
  EXPECT_TRUE(explore_with(mm, [](const auto&) { return false; }, &first).findings.empty());
  EXPECT_TRUE(explore_with(mm, [](const auto&) { return false; }, &second).findings.empty());
  EXPECT_EQ(first, second);
  EXPECT_GT(first, 30);
}

TEST(Explore, VariantIdsRoundTripAndBadOnesSayWhy) {
  const std::vector<InputShape> declared = {{"a", {24, 40}}, {"b", {40, 16}}};
  EXPECT_EQ(variant_id("op/l/mm/f32/contiguous/forward", declared, {{24, 40}, {40, 16}}), "op/l/mm/f32/contiguous/forward");
  const std::string id = variant_id("op/l/mm/f32/contiguous/forward", declared, {{1, 7}, {7, 16}});
  EXPECT_EQ(id, "op/l/mm/f32/contiguous/forward@a=1x7,b=7x16");
  const auto v = parse_variant_id(id);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->base, "op/l/mm/f32/contiguous/forward");
  ASSERT_EQ(v->shapes.size(), 2u);
  EXPECT_EQ(v->shapes[1].second, (Shape{7, 16}));
  EXPECT_FALSE(parse_variant_id("op/l/mm/f32/contiguous/forward"));
  EXPECT_THROW(parse_variant_id("op/l/mm@a"), BadVariantId);
  EXPECT_THROW(parse_variant_id("op/l/mm@a=2x-1"), BadVariantId);
  EXPECT_THROW(parse_variant_id("@a=2"), BadVariantId);
}
