// An expected finding with figure bounds: a known failure that gets worse than its line allows is
// unexpected again (a `mismatch` listed at 29 of 64 elements must not match at 64 of 64, 1000x off).
#include "core/workflow.hpp"

#include <gtest/gtest.h>

#include <limits>

using namespace mpscheck;

namespace {

const nlohmann::json kEnv{{"torch_version", "2.13.0"}, {"os", "macOS 15.3"}};

CaseResult mismatch(std::int64_t bad, double max_abs, double max_rel = 0.1) {
  CaseResult r;
  r.id = "op/conv/conv2d/f16/contiguous/forward";
  r.status = Status::Mismatch;
  OutputReport o;
  o.name = "out";
  o.numel = 64;
  o.mismatches = bad;
  o.max_abs = max_abs;
  o.max_rel = max_rel;
  r.outputs.push_back(o);
  return r;
}

bool expected_under(const std::string& line, CaseResult c) {
  std::vector<CaseResult> cases{std::move(c)};
  apply_expectations(parse_expectations(line, "b.expect"), kEnv, "mps:float16", cases);
  return cases[0].expected && !has_unexpected(cases);
}

}  // namespace

TEST(ExpectationBounds, ParsesEachBound) {
  const auto e =
      parse_expectations("op/x/.*  mismatch  max_abs<=1e-2 max_rel<=0.5 count<=32  # accuracy\n", "b.expect");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_DOUBLE_EQ(e[0].max_abs, 1e-2);
  EXPECT_DOUBLE_EQ(e[0].max_rel, 0.5);
  EXPECT_EQ(e[0].count, 32);
  const auto plain = parse_expectations("op/x/.*  mismatch\n", "b.expect");
  EXPECT_LT(plain[0].max_abs, 0);
  EXPECT_LT(plain[0].count, 0);
}

TEST(ExpectationBounds, AFindingWithinItsBoundsIsExpected) {
  const std::string line = "op/conv/.*  mismatch  count<=32 max_abs<=1e-2\n";
  EXPECT_TRUE(expected_under(line, mismatch(29, 8e-3)));
  EXPECT_TRUE(expected_under(line, mismatch(32, 1e-2)));  // the bound itself is allowed
}

TEST(ExpectationBounds, AFindingWorseThanItsBoundIsUnexpected) {
  const std::string line = "op/conv/.*  mismatch  count<=32 max_abs<=1e-2\n";
  // More elements wrong, by as little as one.
  std::vector<CaseResult> cases{mismatch(33, 8e-3)};
  apply_expectations(parse_expectations(line, "b.expect"), kEnv, "mps:float16", cases);
  EXPECT_FALSE(cases[0].expected);
  EXPECT_TRUE(has_unexpected(cases));
  EXPECT_NE(cases[0].expectation.find("count 33 > 32"), std::string::npos) << cases[0].expectation;
  // The same count, 1000x further off.
  EXPECT_FALSE(expected_under(line, mismatch(29, 8.0)));
  // A figure that is no number (NaN) is beyond any bound.
  EXPECT_FALSE(expected_under(line, mismatch(29, std::numeric_limits<double>::quiet_NaN())));
  // A relative bound.
  EXPECT_FALSE(expected_under("op/conv/.*  mismatch  max_rel<=0.05\n", mismatch(29, 8e-3, 0.2)));
  EXPECT_TRUE(expected_under("op/conv/.*  mismatch  max_rel<=0.5\n", mismatch(29, 8e-3, 0.2)));
}

TEST(ExpectationBounds, ATargetNanBreaksAValueBound) {
  CaseResult c = mismatch(29, 8e-3);
  c.status = Status::Nan;
  c.outputs[0].nan_target = 3;
  c.outputs[0].ok = false;
  EXPECT_FALSE(expected_under("op/conv/.*  nan|mismatch  max_abs<=1e-2\n", c));
  // Its three elements have no figure: they exceed a count bound too (they used to be within it).
  c.outputs[0].nonfinite_mismatches = 3;
  EXPECT_FALSE(expected_under("op/conv/.*  nan|mismatch  count<=32\n", c));
  // A line that names the failing outputs alone, or the status alone, still expects it.
  EXPECT_TRUE(expected_under("op/conv/.*  nan|mismatch  outputs=out\n", c));
  EXPECT_TRUE(expected_under("op/conv/.*  nan|mismatch\n", c));
}

// -inf turned +inf, or NaN turned +inf, has max_abs 0 and the same non-finite counts on both sides:
// only the element count says it, and it exceeds every figure bound.
TEST(ExpectationBounds, ANonFiniteElementThatChangedSignExceedsEveryFigureBound) {
  CaseResult c = mismatch(29, 8e-3);
  c.outputs[0].ok = false;
  const std::string line = "op/conv/.*  mismatch  max_abs<=1e-2 max_rel<=0.5 count<=32\n";
  ASSERT_TRUE(expected_under(line, c));
  c.outputs[0].inf_reference = c.outputs[0].inf_target = 1;
  c.outputs[0].nonfinite_mismatches = 1;
  std::vector<CaseResult> cases{c};
  apply_expectations(parse_expectations(line, "b.expect"), kEnv, "mps:float16", cases);
  EXPECT_FALSE(cases[0].expected);
  EXPECT_NE(cases[0].expectation.find("out: 1 non-finite element(s) differ"), std::string::npos)
      << cases[0].expectation;
}

// A shape, dtype, missing or extra output has no figure at all: beyond every figure bound.
TEST(ExpectationBounds, AnOutputTheSidesCannotCompareExceedsEveryFigureBound) {
  for (const char* differs : {"shape", "dtype", "missing", "extra"}) {
    SCOPED_TRACE(differs);
    CaseResult c = mismatch(29, 8e-3);
    OutputReport o;
    o.name = "second";
    o.ok = false;
    o.differs = differs;
    o.note = std::string(differs) + " differs";
    c.outputs.push_back(o);
    EXPECT_FALSE(expected_under("op/conv/.*  mismatch  max_abs<=1e-2 count<=32\n", c));
    EXPECT_FALSE(expected_under("op/conv/.*  mismatch  count<=1000\n", c));
  }
}

// outputs=: the set of failing outputs, exactly; another output failing beside it is unexpected.
TEST(ExpectationBounds, AnotherSetOfFailingOutputsIsUnexpected) {
  CaseResult c = mismatch(29, 8e-3);
  c.outputs[0].ok = false;
  OutputReport second;
  second.name = "grad/x";
  second.numel = 64;
  c.outputs.push_back(second);
  EXPECT_TRUE(expected_under("op/conv/.*  mismatch  outputs=out\n", c));
  c.outputs[1].ok = false;
  c.outputs[1].mismatches = 1;
  std::vector<CaseResult> cases{c};
  apply_expectations(parse_expectations("op/conv/.*  mismatch  outputs=out\n", "b.expect"), kEnv, "mps:float16", cases);
  EXPECT_FALSE(cases[0].expected);
  EXPECT_NE(cases[0].expectation.find("failing outputs grad/x,out are not the expected out"), std::string::npos)
      << cases[0].expectation;
  EXPECT_TRUE(expected_under("op/conv/.*  mismatch  outputs=grad/x,out\n", c));
}

TEST(ExpectationBounds, AMalformedBoundNamesTheLine) {
  for (const char* bad : {"max_abs<=", "max_abs<=abc", "max_abs<=-1", "count<=2.5", "max_rel<=inf", "count<=3x"}) {
    try {
      parse_expectations(std::string("op/x/.*  mismatch  ") + bad + "\n", "bad.expect");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const ExpectationError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.expect:1:"), std::string::npos) << e.what();
    }
  }
}
