// The explorer's search on a fake runner (no worker, no device): which sizes it tries, how it shrinks
// a failure and where its bisection lands, and the variant ids it makes and resolves.
#include "core/case_variant.hpp"
#include "core/explore.hpp"
#include "core/explore_sizes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <map>
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
    for (const auto& [name, in] : v->inputs) s[name] = in.shape;
  return s;
}

// The same with each input's layout and storage offset.
std::map<std::string, InputVariant> inputs_of(const std::string& id, const std::vector<InputShape>& declared) {
  std::map<std::string, InputVariant> s;
  for (const auto& d : declared) s[d.name] = {d.shape, InputLayout::Declared, 0};
  if (auto v = parse_variant_id(id))
    for (const auto& [name, in] : v->inputs) s[name] = in;
  return s;
}

ExploreOutcome explore_layouts_with(const ShapedCase& c,
                                    const std::function<bool(const std::map<std::string, InputVariant>&)>& wrong,
                                    std::vector<std::string>* ran = nullptr) {
  const RunCase run = [&](const std::string& id, double) {
    if (ran) ran->push_back(id);
    CaseResult r;
    r.id = id;
    r.status = wrong(inputs_of(id, c.input_shapes())) ? Status::Mismatch : Status::Pass;
    r.message = r.status == Status::Mismatch ? "1 of N elements differ" : "";
    return r;
  };
  std::ostringstream log;
  return explore_cases({{&c, no_plugin()}}, {}, run, ExploreOptions{}, log);
}

ExploreOutcome explore_with(const ShapedCase& c, const std::function<bool(const std::map<std::string, Shape>&)>& wrong,
                            int* runs = nullptr) {
  const RunCase run = [&](const std::string& id, double) {
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

// Each id is refused by parse_variant_id with a message that quotes it.
void expect_refused(std::initializer_list<const char*> ids) {
  for (const char* bad : ids) {
    try {
      parse_variant_id(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const BadVariantId& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
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

// A GRU cell's gate rows are 3 x its hidden size. CPU's cell broadcasts a mismatched gate block
// without a word while a fused target cell refuses it, so a shape that breaks the tie is a false
// finding, not a bug; explore keeps the declared tie and still bisects a planted hidden-size bug.
TEST(Explore, ATiedDimensionFollowsItsMultipleAndNeverBreaksTheTie) {
  InputShape w_ih{"w_ih", {36, 8}, "contiguous", {{0, "h", 1, 3}}};
  InputShape b_ih{"b_ih", {36}, "contiguous", {{0, "h", 1, 3}}};
  const ShapedCase gru("op/recurrent/gru_cell/f32/contiguous/forward", {{"x", {3, 8}}, {"h", {3, 12}}, w_ih, b_ih});
  const auto groups = explore_detail::size_groups(gru.input_shapes());
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[2].name, "h[1]=w_ih[0]/3=b_ih[0]/3");
  EXPECT_EQ(groups[2].declared, 12);

  int broken = 0;
  const auto out = explore_with(gru, [&](const auto& s) {
    if (s.at("w_ih")[0] != 3 * s.at("h")[1] || s.at("b_ih")[0] != 3 * s.at("h")[1]) ++broken;
    return s.at("w_ih")[0] != 3 * s.at("h")[1] || s.at("h")[1] >= 100;
  });
  EXPECT_EQ(broken, 0);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].dimension, "h[1]=w_ih[0]/3=b_ih[0]/3");
  EXPECT_EQ(out.findings[0].first_failing, 100);
  EXPECT_EQ(out.findings[0].last_passing, 99);
  EXPECT_NE(out.findings[0].id.find("w_ih=300x1"), std::string::npos) << out.findings[0].id;
}

TEST(Explore, ATieThatItsDeclarationDoesNotHoldIsIgnored) {
  InputShape w{"w", {35, 8}, "contiguous", {{0, "h", 1, 3}}};
  const auto groups = explore_detail::size_groups({{"h", {3, 12}}, w});
  std::vector<std::string> names;
  for (const auto& g : groups) names.push_back(g.name);
  EXPECT_EQ(names, (std::vector<std::string>{"h[0]", "h[1]", "w[0]", "w[1]"}));
}

// An LSTM's state holds one row per layer: CPU reads the first rows of a longer state, a target may
// refuse it. A pinned dimension is never varied, and the rest still are.
TEST(Explore, APinnedDimensionKeepsItsDeclaredSize) {
  InputShape h{"h", {1, 3, 12}, "contiguous", {{0, "", 0, 1}}};
  const ShapedCase lstm("op/recurrent/lstm/f32/contiguous/forward", {{"x", {5, 3, 8}}, h});
  int varied = 0, runs = 0;
  const auto out = explore_with(
      lstm,
      [&](const auto& s) {
        varied += s.at("h")[0] != 1;
        return s.at("h")[0] != 1;
      },
      &runs);
  EXPECT_EQ(varied, 0);
  EXPECT_GT(runs, 20);
  EXPECT_TRUE(out.findings.empty());
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
  EXPECT_TRUE(explore_with(
                  mm, [](const auto&) { return false; }, &first)
                  .findings.empty());
  EXPECT_TRUE(explore_with(
                  mm, [](const auto&) { return false; }, &second)
                  .findings.empty());
  EXPECT_EQ(first, second);
  EXPECT_GT(first, 30);
}

TEST(Explore, VariantIdsRoundTripAndBadOnesSayWhy) {
  const std::vector<InputShape> declared = {{"a", {24, 40}}, {"b", {40, 16}}};
  EXPECT_EQ(variant_id("op/l/mm/f32/contiguous/forward", declared, {{24, 40}, {40, 16}}),
            "op/l/mm/f32/contiguous/forward");
  const std::string id = variant_id("op/l/mm/f32/contiguous/forward", declared, {{1, 7}, {7, 16}});
  EXPECT_EQ(id, "op/l/mm/f32/contiguous/forward@a=1x7,b=7x16");
  const auto v = parse_variant_id(id);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->base, "op/l/mm/f32/contiguous/forward");
  ASSERT_EQ(v->inputs.size(), 2u);
  EXPECT_EQ(v->inputs[1].input.shape, (Shape{7, 16}));
  EXPECT_EQ(v->inputs[1].input.layout, InputLayout::Declared);
  EXPECT_FALSE(parse_variant_id("op/l/mm/f32/contiguous/forward"));
  EXPECT_THROW(parse_variant_id("op/l/mm@a"), BadVariantId);
  EXPECT_THROW(parse_variant_id("op/l/mm@a=2x-1"), BadVariantId);
  EXPECT_THROW(parse_variant_id("@a=2"), BadVariantId);
}

TEST(Explore, LayoutIdsRoundTripAndBadOnesSayWhy) {
  const std::vector<InputShape> declared = {{"x", {4, 8, 16, 16}, "contiguous"}, {"w", {8}, "contiguous"}};
  const std::string id = variant_id(
      "op/p/avg/f32/contiguous/forward", declared,
      std::vector<InputVariant>{{{4, 8, 16, 16}, InputLayout::ChannelsLast, 3}, {{8}, InputLayout::Declared, 0}});
  EXPECT_EQ(id, "op/p/avg/f32/contiguous/forward@x=4x8x16x16+cl+off3");
  const auto v = parse_variant_id(id);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->inputs.size(), 1u);
  EXPECT_EQ(v->inputs[0].name, "x");
  EXPECT_EQ(v->inputs[0].input.shape, (Shape{4, 8, 16, 16}));
  EXPECT_EQ(v->inputs[0].input.layout, InputLayout::ChannelsLast);
  EXPECT_EQ(v->inputs[0].input.storage_offset, 3);
  const auto t = parse_variant_id("op/a@x=2x3+off1+t,w=8+c");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->inputs[0].input.layout, InputLayout::Transposed);
  EXPECT_EQ(t->inputs[0].input.storage_offset, 1);
  EXPECT_EQ(t->inputs[1].input.layout, InputLayout::Contiguous);
  expect_refused({"op/a@x=2x3+off0", "op/a@x=2x3+cl+cl", "op/a@x=2x3+wide", "op/a@x=2x3+off1+off2", "op/a@x=2x3+",
                  "op/a@x=2x3+off-1"});
}

// A CPU 0-dim operand: `NAME=+cpu`, no shape (the input is 0-dim whatever its declaration), and
// `+offN` with it (a 0-dim view into a longer CPU buffer); a shape with it, or +cpu twice, is refused.
TEST(Explore, CpuScalarIdsRoundTripAndBadOnesSayWhy) {
  const std::vector<InputShape> declared = {{"a", {48, 64}, "contiguous", {}, true},
                                            {"b", {48, 64}, "contiguous", {}, true}};
  const std::string base = "op/binary/mul/f32/contiguous/forward";
  const std::string id = variant_id(
      base, declared, std::vector<InputVariant>{{{}, InputLayout::CpuScalar, 0}, {{1, 1}, InputLayout::Declared, 0}});
  EXPECT_EQ(id, base + "@a=+cpu,b=1x1");
  const auto v = parse_variant_id(id);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->inputs.size(), 2u);
  EXPECT_EQ(v->inputs[0].name, "a");
  EXPECT_TRUE(v->inputs[0].input.shape.empty());
  EXPECT_EQ(v->inputs[0].input.layout, InputLayout::CpuScalar);
  EXPECT_EQ(v->inputs[0].input.storage_offset, 0);
  EXPECT_EQ(variant_id(base, declared, {v->inputs[0].input, v->inputs[1].input}), id);
  const auto off = parse_variant_id(base + "@b=+cpu+off2");
  ASSERT_TRUE(off);
  EXPECT_EQ(off->inputs[0].input.layout, InputLayout::CpuScalar);
  EXPECT_EQ(off->inputs[0].input.storage_offset, 2);
  EXPECT_EQ(layout_text(InputLayout::CpuScalar, 2), "+cpu+off2");
  EXPECT_EQ(layout_words(InputLayout::CpuScalar, 0, "contiguous"), "as a 0-dim tensor on the CPU");
  expect_refused({"op/a@x=2x3+cpu", "op/a@x=+cpu+cpu", "op/a@x=+cpu+t", "op/a@x=1+cpu"});
}

// +cpu is offered once per input, last, and only where it makes sense: a floating input of 1 or
// more dimensions beside another input (alone, the whole op would run on the CPU).
TEST(Explore, CpuScalarIsOfferedOnlyForAFloatingInputBesideAnother) {
  auto cpu_scalars = [](const std::vector<InputShape>& in, size_t i) {
    const auto c = explore_detail::layout_candidates(in, i);
    const auto n =
        std::count_if(c.begin(), c.end(), [](const InputVariant& v) { return v.layout == InputLayout::CpuScalar; });
    if (n > 0) {
      EXPECT_EQ(c.back().layout, InputLayout::CpuScalar);
      EXPECT_EQ(c.back().storage_offset, 0);
    }
    return n;
  };
  const InputShape a{"a", {48, 64}, "contiguous", {}, true}, v{"v", {7}, "contiguous", {}, true},
      mask{"m", {48, 64}, "contiguous", {}, false}, zero_d{"s", {}, "contiguous", {}, true},
      empty{"e", {0, 4}, "contiguous", {}, true};
  EXPECT_EQ(cpu_scalars({a, v}, 0), 1);
  EXPECT_EQ(cpu_scalars({a, v}, 1), 1);
  EXPECT_EQ(cpu_scalars({a, mask}, 0), 1);
  EXPECT_EQ(cpu_scalars({a, mask}, 1), 0);    // not floating
  EXPECT_EQ(cpu_scalars({a}, 0), 0);          // alone
  EXPECT_EQ(cpu_scalars({a, zero_d}, 1), 0);  // 0-dim already
  EXPECT_EQ(cpu_scalars({a, empty}, 1), 0);   // empty
}

// An op that takes no CPU scalar (clamp's self beside device bounds) is refused by PyTorch's own
// device check on the target, not by a kernel: no finding. A wrong value with one, or that error
// without one, still is.
TEST(Explore, PyTorchsDeviceCheckRefusingACpuScalarIsNoFinding) {
  CaseResult r;
  r.id = "op/binary/clamp_tensor/f32/contiguous/forward@a=+cpu,b=1x1,hi=1x1";
  r.status = Status::Error;
  r.phase = "target";
  r.message = "Expected all tensors to be on the same device, but found at least two devices, sim:0 and cpu!";
  EXPECT_FALSE(explore_failure(r));
  CaseResult wrong = r;
  wrong.status = Status::Mismatch;
  wrong.message = "out: 1 of 1 elements outside tolerance";
  EXPECT_TRUE(explore_failure(wrong));
  CaseResult declared = r;
  declared.id = "op/binary/clamp_tensor/f32/contiguous/forward@b=1x1";
  EXPECT_TRUE(explore_failure(declared));
  // The RNN layers' own check says it in other words.
  CaseResult rnn = r;
  rnn.id = "op/recurrent/gru/f32/contiguous/forward@x=1x1x1,h=1x1x1,b_ih_l0=+cpu";
  rnn.message =
      "Input and parameter tensors are not at the same device, found input tensor at sim:0 and parameter "
      "tensor at cpu";
  EXPECT_FALSE(explore_failure(rnn));
  // Any other error of a +cpu variant is a finding (a kernel that crashes on a CPU scalar).
  CaseResult other = r;
  other.message = "sim: kernel read past the end of a buffer";
  EXPECT_TRUE(explore_failure(other));
}

// An RNN's weights and states have shapes the op fixes (declared size ties): neither a tied input
// nor one that others are tied to is offered as a CPU scalar; an untied one still is.
TEST(Explore, AnInputInASizeTieIsNeverOfferedAsACpuScalar) {
  const std::vector<InputShape> lstm = {{"x", {5, 3, 8}, "contiguous", {}, true},
                                        {"h", {1, 3, 12}, "contiguous", {{0, "", 0, 1}}, true},
                                        {"w_ih", {48, 8}, "contiguous", {{0, "h", 2, 4}}, true},
                                        {"bias", {7}, "contiguous", {}, true},
                                        {"w_hh", {48, 12}, "contiguous", {}, true},
                                        {"scale", {3}, "contiguous", {{0, "h", 1, 1}}, true}};
  auto offers_cpu = [&](size_t i) {
    const auto c = explore_detail::layout_candidates(lstm, i);
    return std::any_of(c.begin(), c.end(), [](const InputVariant& v) { return v.layout == InputLayout::CpuScalar; });
  };
  EXPECT_TRUE(offers_cpu(0));   // x
  EXPECT_FALSE(offers_cpu(1));  // h: pinned, and others follow it
  EXPECT_FALSE(offers_cpu(2));  // w_ih: tied to h
  EXPECT_TRUE(offers_cpu(3));   // bias: in no tie
  EXPECT_FALSE(offers_cpu(5));  // scale: tied
}

// The sim's `cpu-scalar` class: mul wrong when either operand is a CPU 0-dim tensor, at any size.
// The finding is the smallest case that shows it, the scalar named in words; the declared layout
// at those sizes passes.
TEST(Explore, ACpuScalarOperandFailureIsMinimisedAndNamed) {
  const ShapedCase mul("op/binary/mul/f32/contiguous/forward",
                       {{"a", {48, 64}, "contiguous", {}, true}, {"b", {48, 64}, "contiguous", {}, true}});
  std::vector<std::string> ran;
  const auto out = explore_layouts_with(
      mul,
      [](const auto& in) {
        return in.at("a").layout == InputLayout::CpuScalar || in.at("b").layout == InputLayout::CpuScalar;
      },
      &ran);
  ASSERT_EQ(out.findings.size(), 1u);
  const ExploreFinding& f = out.findings[0];
  EXPECT_EQ(f.id, "op/binary/mul/f32/contiguous/forward@a=+cpu,b=1x1");
  EXPECT_EQ(f.pattern, "layout");
  EXPECT_EQ(f.layout, "a as a 0-dim tensor on the CPU");
  EXPECT_EQ(f.summary, "wrong for a as a 0-dim tensor on the CPU; a contiguous passes");
  // One input at a time: no variant has both on the CPU.
  for (const auto& id : ran) EXPECT_EQ(id.find("+cpu,b=+cpu"), std::string::npos) << id;
}

// The sim's `offset` class: wrong only for a channels_last input at an odd storage offset, and
// only where channels_last differs from contiguous (more than one channel and one pixel).
TEST(Explore, ALayoutFailureIsMinimisedToItsLayoutAndOffset) {
  const ShapedCase pool("op/pool/avg_pool2d/f32/contiguous/forward", {{"x", {2, 8, 16, 16}, "contiguous"}});
  const auto out = explore_layouts_with(pool, [](const auto& in) {
    const InputVariant& x = in.at("x");
    return x.layout == InputLayout::ChannelsLast && x.storage_offset % 2 == 1 && x.shape[1] > 1 &&
           x.shape[2] * x.shape[3] > 1;
  });
  ASSERT_EQ(out.findings.size(), 1u);
  const ExploreFinding& f = out.findings[0];
  EXPECT_EQ(f.id, "op/pool/avg_pool2d/f32/contiguous/forward@x=1x2x2x2+cl+off1");
  EXPECT_EQ(f.pattern, "layout");
  EXPECT_EQ(f.layout, "x channels_last at storage offset 1");
  EXPECT_EQ(f.first_failing, 1);
  EXPECT_EQ(f.summary,
            "wrong for x channels_last at storage offset 1; at offset 0 it passes, 2 passes and 3 fails "
            "(odd offsets), x contiguous at storage offset 1 passes");
}

TEST(Explore, AnOffsetThatFailsInAnyLayoutIsNotPinnedOnTheLayout) {
  const ShapedCase c("op/x/y/f32/transposed/forward", {{"x", {6, 10}, "transposed"}});
  const auto out = explore_layouts_with(c, [](const auto& in) { return in.at("x").storage_offset >= 2; });
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].id, "op/x/y/f32/transposed/forward@x=1x1+off2");
  EXPECT_EQ(out.findings[0].layout, "x transposed at storage offset 2");
  EXPECT_EQ(out.findings[0].summary,
            "wrong for x transposed at storage offset 2; at offset 0 it passes, offset 3 fails too");
}

// Wrong only when both differ from the declaration: a transposed input with rows of 1000 or more
// (a strided kernel whose long-row path has the bug). Neither the layouts at the declared sizes nor
// the sizes in the declared layout reach it; the layouts at the largest passing size do.
TEST(Explore, ALayoutThatFailsOnlyAtAnotherSizeIsFoundAndBisectedWithItsLayout) {
  const ShapedCase c("op/x/y/f32/contiguous/forward", {{"x", {64, 96}, "contiguous"}});
  std::vector<std::string> ran;
  const auto out = explore_layouts_with(
      c,
      [](const auto& in) {
        const InputVariant& x = in.at("x");
        return x.layout == InputLayout::Transposed && x.storage_offset == 0 && x.shape[1] >= 1000;
      },
      &ran);
  ASSERT_EQ(out.findings.size(), 1u);
  const ExploreFinding& f = out.findings[0];
  EXPECT_EQ(f.id, "op/x/y/f32/contiguous/forward@x=1x1000+t");
  EXPECT_EQ(f.pattern, "from");
  EXPECT_EQ(f.first_failing, 1000);
  EXPECT_EQ(f.last_passing, 999);
  EXPECT_EQ(f.layout, "x transposed");
  EXPECT_EQ(f.summary.rfind("with x transposed: wrong from x[1] = 1000; x[1] = 999 passes", 0), 0u) << f.summary;
  // The sizes in the declared layout ran first and passed: the failure needs both.
  EXPECT_NE(std::find(ran.begin(), ran.end(), "op/x/y/f32/contiguous/forward@x=64x1024"), ran.end());
}

TEST(Explore, LayoutsAreTriedOnlyWhereTheRankAllows) {
  const ShapedCase c("op/x/y/f32/contiguous/forward", {{"v", {7}, "contiguous"}});
  std::vector<std::string> ran;
  EXPECT_TRUE(explore_layouts_with(
                  c, [](const auto&) { return false; }, &ran)
                  .findings.empty());
  for (const auto& id : ran) {
    EXPECT_EQ(id.find("+t"), std::string::npos) << id;
    EXPECT_EQ(id.find("+cl"), std::string::npos) << id;
  }
  EXPECT_NE(std::find(ran.begin(), ran.end(), "op/x/y/f32/contiguous/forward@v=7+off1"), ran.end());
}

TEST(Explore, FindingsBecomeFailingCasesUnderTheirVariantIdAndTheRestPassOrSkip) {
  ExploreOutcome o;
  ExploreFinding f;
  f.base = "op/a/mm/f32/contiguous/forward";
  f.id = f.base + "@a=1x10000,b=10000x1";
  f.status = Status::Mismatch;
  f.message = "out: 1 of 1 elements outside tolerance";
  f.summary = "wrong from a[1]=b[0] = 10000; a[1]=b[0] = 9999 passes";
  f.pattern = "from";
  f.result.id = f.id;
  f.result.status = Status::Mismatch;
  f.result.target = "sim";
  o.findings.push_back(f);
  o.cases.push_back({f.base, 40, 2.0, "", true});
  o.cases.push_back({"op/a/mm/f32/transposed/forward", 80, 3.0, "", true});
  o.cases.push_back({"op/a/mm/f32/sliced/forward", 0, 0, "not explored: the run's budget was spent", false});
  const std::vector<CaseResult> r = explore_case_results(o);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].id, f.id);
  EXPECT_EQ(r[0].status, Status::Mismatch);
  EXPECT_EQ(r[0].target, "sim");
  EXPECT_EQ(r[0].message, f.summary + "; " + f.message);
  EXPECT_EQ(r[1].id, "op/a/mm/f32/transposed/forward");
  EXPECT_EQ(r[1].status, Status::Pass);
  EXPECT_EQ(r[1].message, "explored: 80 variants, no finding");
  EXPECT_EQ(r[2].status, Status::Skip);
  EXPECT_EQ(r[2].message, "not explored: the run's budget was spent");
}

// A variant still running when the case's budget runs out is stopped (the runner is given what is
// left of it) and is no finding; exploring the case's layouts and sizes stops there, and the three
// state probes run in the part of the budget kept for them.
TEST(Explore, AVariantIsGivenOnlyWhatIsLeftOfTheBudgetAndStoppingItIsNoFinding) {
  const ShapedCase mm("op/linalg/mm/f32/contiguous/forward", {{"a", {24, 40}}, {"b", {40, 16}}});
  std::vector<double> limits;
  int runs = 0;
  const RunCase run = [&](const std::string& id, double limit_s) {
    limits.push_back(limit_s);
    CaseResult r;
    r.id = id;
    r.status = Status::Pass;
    if (++runs == 5) {  // the runner stopped it at the limit
      r.status = Status::Skip;
      r.phase = kBudgetPhase;
    }
    return r;
  };
  ExploreOptions options;
  options.case_budget_s = 30;
  options.run_budget_s = 20;
  std::ostringstream log;
  const ExploreOutcome out = explore_cases({{&mm, no_plugin()}}, {}, run, options, log);
  EXPECT_TRUE(out.findings.empty());
  ASSERT_EQ(runs, 8);
  for (double l : limits) {
    EXPECT_GT(l, 0);
    EXPECT_LE(l, 20.0);  // the run's budget is the shorter
  }
  ASSERT_EQ(out.cases.size(), 1u);
  EXPECT_EQ(out.cases[0].note, "budget spent after 8 variants; no finding");
  const auto results = explore_case_results(out);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_NE(results[0].status, Status::Mismatch);
}

// A layout's words name the element the input starts at: exact for a layout that starts at its
// storage's first element, and for a sliced input (which starts one element in already) a shift.
TEST(Explore, LayoutWordsNeverCallAShiftedSliceAnAbsoluteOffset) {
  EXPECT_EQ(layout_words(InputLayout::ChannelsLast, 1, "contiguous"), "channels_last at storage offset 1");
  EXPECT_EQ(layout_words(InputLayout::Declared, 2, "transposed"), "transposed at storage offset 2");
  EXPECT_EQ(layout_words(InputLayout::Declared, 1, "sliced"), "sliced, shifted 1 element further along its storage");
  EXPECT_EQ(layout_words(InputLayout::Declared, 3, "sliced"), "sliced, shifted 3 elements further along its storage");
  EXPECT_EQ(layout_words(InputLayout::Declared, 0, "sliced"), "sliced");
}

// The speed search (core/explore_speed.hpp) at the end of a case whose sizes all pass.
namespace {

std::int64_t row_length(const std::string& id, std::int64_t declared) {
  const std::optional<VariantId> v = parse_variant_id(id);
  return v && !v->inputs.empty() ? v->inputs[0].input.shape[1] : declared;
}

}  // namespace

TEST(Explore, ACliffIsAFindingWhoseResultsStayAPass) {
  const ShapedCase cumsum("op/reduction/cumsum/f32/contiguous/forward", {{"x", {32, 256}}});
  const RunCase run = [](const std::string& id, double) {
    CaseResult r;
    r.id = id;
    r.status = Status::Pass;
    return r;
  };
  ExploreOptions options;
  options.timed = [](const std::string& id, double) {
    CaseResult r;
    r.id = id;
    r.status = Status::Pass;
    const double n = static_cast<double>(row_length(id, 256));
    r.reference_time = TimingStats{1e-6 * n, 1e-6 * n, 1e-6 * n, 5};
    r.target_time = TimingStats{(n > 4096 ? 8e-6 : 1.2e-6) * n, 0, 0, 5};
    r.message = "all outputs within tolerance";
    return r;
  };
  std::ostringstream log;
  const ExploreOutcome out = explore_cases({{&cumsum, no_plugin()}}, {}, run, options, log);
  ASSERT_EQ(out.findings.size(), 1u) << log.str();
  const ExploreFinding& f = out.findings[0];
  EXPECT_EQ(f.pattern, "cliff");
  EXPECT_EQ(f.dimension, "x[1]");
  EXPECT_EQ(f.first_failing, 4097);
  EXPECT_EQ(f.last_passing, 4096);
  EXPECT_EQ(f.id, "op/reduction/cumsum/f32/contiguous/forward@x=32x4097");
  EXPECT_EQ(f.status, Status::Pass);
  EXPECT_NE(f.summary.find("8.0x the CPU's time there, 1.2x at 4096"), std::string::npos) << f.summary;
  const std::vector<CaseResult> results = explore_case_results(out);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, f.id);
  EXPECT_EQ(results[0].status, Status::Pass);
  EXPECT_EQ(results[0].speed_class, SpeedClass::Slower);
  EXPECT_NE(results[0].message.find("slower from x[1] = 4097"), std::string::npos) << results[0].message;

  // A machine busy with other work: every size is tried three times, then the search ends and says so.
  const RunCase timed = options.timed;
  int busy_runs = 0;
  options.timed = [&](const std::string& id, double limit) {
    CaseResult r = timed(id, limit);
    r.host_busy = true;
    ++busy_runs;
    return r;
  };
  const ExploreOutcome busy = explore_cases({{&cumsum, no_plugin()}}, {}, run, options, log);
  EXPECT_TRUE(busy.findings.empty());
  EXPECT_EQ(busy_runs, 3);
  ASSERT_EQ(busy.cases.size(), 1u);
  EXPECT_EQ(busy.cases[0].note, "no speed search: the machine was busy with other work while sizes were timed");

  // Busy only while the jump is bisected (sizes that are not powers of two): the cliff stands,
  // unbisected, and both the finding and the case say why it stopped short, never "the budget ran
  // out" when it did not (a caller that repeats a busy run finds the word there).
  options.timed = [&](const std::string& id, double limit) {
    CaseResult r = timed(id, limit);
    const std::int64_t n = row_length(id, 256);
    r.host_busy = (n & (n - 1)) != 0;
    return r;
  };
  const ExploreOutcome cut = explore_cases({{&cumsum, no_plugin()}}, {}, run, options, log);
  ASSERT_EQ(cut.findings.size(), 1u) << log.str();
  EXPECT_EQ(cut.findings[0].first_failing, 8192);
  EXPECT_EQ(cut.findings[0].last_passing, 4096);
  EXPECT_NE(cut.findings[0].summary.find(
                "slower somewhere from x[1] = 8192: the target takes 8.0x the CPU's time there, 1.2x at 4096"),
            std::string::npos)
      << cut.findings[0].summary;
  EXPECT_NE(cut.findings[0].summary.find(
                "the exact size is not known: the machine was busy with other work while sizes were timed"),
            std::string::npos)
      << cut.findings[0].summary;
  ASSERT_EQ(cut.cases.size(), 1u);
  EXPECT_EQ(cut.cases[0].note, "speed search cut short: the machine was busy with other work while sizes were timed");

  // No timed runner (--min-time 0): no speed search, no finding.
  options.timed = {};
  EXPECT_TRUE(explore_cases({{&cumsum, no_plugin()}}, {}, run, options, log).findings.empty());
}
