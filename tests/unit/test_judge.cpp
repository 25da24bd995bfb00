// The judge (checks/judge.hpp) behind its one seam, CaseHost: what it asks the host for, and when.
#include "checks/judge.hpp"

#include "checks/tolerance.hpp"
#include <mpscheck/dtype_names.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>

using namespace mpscheck;

namespace {

class NoInstance final : public Instance {
 public:
  Outputs run() override { return {}; }
};

class OneOutputWorkload final : public Workload {
 public:
  std::string id() const override { return "op/test/judge/f32/contiguous/forward"; }
  Kind kind() const override { return Kind::Op; }
  std::unique_ptr<Instance> instantiate(const Setup&, const Placement&) const override {
    return std::make_unique<NoInstance>();
  }
};

// A host that hands out a fixed gold run (or fails to) and counts what the judge asked for.
class FakeHost final : public CaseHost {
 public:
  explicit FakeHost(at::Tensor gold, bool gold_fails = false) : gold_(std::move(gold)), gold_fails_(gold_fails) {}
  void enter_phase(const char* phase) override { phases.emplace_back(phase); }
  Outputs run(const Placement& where, const char*) override {
    ++runs;
    // Only a fresh float32 reference is the same run again; a witness or a rounded-input baseline is not.
    if (again && where.side == Side::Reference && where.dtype == c10::kFloat &&
        where.round_inputs_to == c10::ScalarType::Undefined)
      return *again;
    throw std::runtime_error("no other side in this test");
  }
  Outputs trace(const Placement&) override { return {}; }
  std::map<std::string, at::Tensor> gold() override {
    ++gold_calls;
    if (gold_fails_) throw std::runtime_error("float64 kernel missing");
    return {{"out", gold_}};
  }
  std::vector<std::string> target_warnings() override { return {}; }
  const ReferenceRerun* kept_rerun() override { return kept ? &*kept : nullptr; }
  void keep_rerun(const ReferenceRerun& rerun) override { kept = rerun; }
  std::string current_phase() override { return phases.empty() ? std::string() : phases.back(); }
  std::unique_ptr<Instance> instantiate(const Placement&) override { throw std::runtime_error("nothing timed here"); }
  void synchronize(const c10::Device&) override {}
  const TimingStats* kept_reference_time(double) override { return nullptr; }
  void keep_reference_time(const TimingStats&, double) override {}
  std::optional<Outputs> again;  // what a second reference instance gives; none: it throws
  std::optional<ReferenceRerun> kept;
  int gold_calls = 0, runs = 0;
  std::vector<std::string> phases;

 private:
  at::Tensor gold_;
  bool gold_fails_;
};

const Tolerance kTol{1.3e-6, 1e-5};

// float64 truth, a float32 reference 1e-3 off it on one element, and a target equal to the truth.
struct Sides {
  at::Tensor gold = at::linspace(1, 2, 64, at::kDouble);
  at::Tensor reference = gold.to(at::kFloat).clone();
  Sides() { reference[7] += 1e-3; }
};

}  // namespace

TEST(Judge, AnOutputThatAgreesNeedsNoGoldRun) {
  const OneOutputWorkload w;
  const Sides s;
  FakeHost host(s.gold);
  CaseResult r;
  judge_case(w, host, {Output("out", s.reference)}, {Output("out", s.reference.clone())}, c10::Device(c10::kCPU),
             c10::kFloat, kTol, {}, r);
  EXPECT_EQ(r.status, Status::Pass);
  EXPECT_EQ(host.gold_calls, 0);
  EXPECT_TRUE(host.phases.empty());
}

// The judge asks the host for gold, in the float64 phase, and passes a target that float64 shows
// is the better side; the same disagreement with the target on the wrong side stays a mismatch.
TEST(Judge, GoldComesFromTheHostAndDecidesWhichSideIsFragile) {
  const OneOutputWorkload w;
  const Sides s;
  {
    FakeHost host(s.gold);
    CaseResult r;
    judge_case(w, host, {Output("out", s.reference)}, {Output("out", s.gold.to(at::kFloat))}, c10::Device(c10::kCPU),
               c10::kFloat, kTol, {}, r);
    EXPECT_EQ(r.status, Status::Pass) << r.message;
    EXPECT_EQ(r.attribution, Fragile::Float32);
    EXPECT_EQ(host.gold_calls, 1);
    ASSERT_FALSE(host.phases.empty());
    EXPECT_EQ(host.phases.front(), "float64");
  }
  {
    FakeHost host(s.gold);
    CaseResult r;
    at::Tensor wrong = s.gold.to(at::kFloat).clone();
    wrong[7] -= 1e-3;
    judge_case(w, host, {Output("out", s.gold.to(at::kFloat))}, {Output("out", wrong)}, c10::Device(c10::kCPU),
               c10::kFloat, kTol, {}, r);
    EXPECT_EQ(r.status, Status::Mismatch) << r.message;
    EXPECT_EQ(r.attribution, Fragile::Target);
  }
}

// A gold run that fails forgives nothing: the mismatch stands and says why it was not attributed.
TEST(Judge, AFailedGoldRunLeavesTheMismatchAndSaysSo) {
  const OneOutputWorkload w;
  const Sides s;
  FakeHost host(s.gold, /*gold_fails=*/true);
  CaseResult r;
  judge_case(w, host, {Output("out", s.reference)}, {Output("out", s.gold.to(at::kFloat))}, c10::Device(c10::kCPU),
             c10::kFloat, kTol, {}, r);
  EXPECT_EQ(r.status, Status::Mismatch);
  EXPECT_NE(r.message.find("no float64 gold run to attribute it (float64 kernel missing)"), std::string::npos)
      << r.message;
}

// A reference that gave an element two ways: a target that matches either run there passes, and the
// result says which output the reference differed in.
TEST(Judge, AnElementTheReferenceGaveTwoWaysMatchesEitherRun) {
  const OneOutputWorkload w;
  const Sides s;
  FakeHost host(s.gold, /*gold_fails=*/true);
  CaseResult r;
  judge_case(w, host, {Output("out", s.reference)}, {Output("out", s.gold.to(at::kFloat))}, c10::Device(c10::kCPU),
             c10::kFloat, kTol, {{"out", s.gold.to(at::kFloat)}}, r);
  EXPECT_EQ(r.status, Status::Pass) << r.message;
  EXPECT_TRUE(r.nondeterministic);
  EXPECT_NE(r.message.find("in 1 output (the most, out, by 0.001)"), std::string::npos) << r.message;
  EXPECT_EQ(host.gold_calls, 0);
}

// The reference's determinism is the judge's: a second fresh reference is asked of the host once,
// its values kept with the reference, and a later case with a kept rerun runs nothing more. An
// element the second reference gives differently spans an interval: a target inside it passes and
// one beyond it does not.
TEST(Judge, TheReferenceSpreadIsMeasuredOnceAndKept) {
  const OneOutputWorkload w;
  const Sides s;
  at::Tensor wobble = s.reference.clone();
  wobble[3] += 2e-4;  // the reference differs from itself by 2e-4 at one element
  FakeHost host(s.gold);
  host.again = Outputs{Output("out", wobble)};
  at::Tensor inside = s.reference.clone();
  inside[3] += 1.5e-4;
  CaseResult r;
  judge_sides(w, host, {Output("out", s.reference)}, {Output("out", inside)}, c10::Device(c10::kCPU), c10::kFloat, kTol,
              r);
  EXPECT_EQ(r.status, Status::Pass) << r.message;
  EXPECT_EQ(host.runs, 1);
  ASSERT_TRUE(host.kept.has_value());
  ASSERT_EQ(host.kept->count("out"), 1U);
  EXPECT_NEAR((host.kept->at("out") - s.reference).abs().max().item<double>(), 2e-4, 1e-6);
  EXPECT_EQ(host.phases, (std::vector<std::string>{"reference", "comparison"}));

  at::Tensor beyond = s.reference.clone();
  beyond[3] += 1e-2;  // 50 times the interval, and ten times float32's own error at [7]
  CaseResult again;
  judge_sides(w, host, {Output("out", s.reference)}, {Output("out", beyond)}, c10::Device(c10::kCPU), c10::kFloat, kTol,
              again);
  EXPECT_EQ(again.status, Status::Mismatch) << again.message;
  EXPECT_EQ(host.runs, 1) << "a kept rerun is not run again";
}

// A reference that differs from itself by far more than its tolerance is no reference: an error
// that says so, never a verdict on the target; so is a case with nothing to compare.
TEST(Judge, AWildReferenceOrNoOutputIsAnErrorNotAVerdict) {
  const OneOutputWorkload w;
  const Sides s;
  FakeHost host(s.gold);
  at::Tensor wild = s.reference.clone();
  wild[0] += 1.0;
  host.again = Outputs{Output("out", wild)};
  CaseResult r;
  judge_sides(w, host, {Output("out", s.reference)}, {Output("out", s.reference.clone())}, c10::Device(c10::kCPU),
              c10::kFloat, kTol, r);
  EXPECT_EQ(r.status, Status::Error);
  EXPECT_TRUE(r.nondeterministic);
  EXPECT_NE(r.message.find("not deterministic"), std::string::npos) << r.message;

  FakeHost empty(s.gold);
  empty.kept = ReferenceRerun{};
  CaseResult none;
  judge_sides(w, empty, {}, {}, c10::Device(c10::kCPU), c10::kFloat, kTol, none);
  EXPECT_EQ(none.status, Status::Error);
  EXPECT_NE(none.message.find("no output to compare"), std::string::npos) << none.message;
  EXPECT_EQ(empty.runs, 0);
}

// check_case, checks/'s one entry: a case one of whose sides could not run still gets the
// tolerance it was judged by, and nothing is asked of the host.
TEST(Judge, ACaseWhoseSideFailedGetsItsToleranceAndNoJudgement) {
  const OneOutputWorkload w;
  FakeHost host(at::Tensor{});
  CaseResult r;
  r.status = Status::Unsupported;
  r.phase = "target";
  r.dtype = "bfloat16";  // the host's identify names it
  check_case(w, host, nullptr, c10::Device(c10::kCPU), c10::kBFloat16, TimingPlan{}, r);
  EXPECT_EQ(r.status, Status::Unsupported);
  EXPECT_EQ(r.rtol, tolerance_for(w.family(), c10::kBFloat16).rtol);
  EXPECT_FALSE(r.timed);
  EXPECT_TRUE(host.phases.empty());
  EXPECT_EQ(host.runs, 0);
}

// A case that passes is timed; what fails while timing is mpscheck's error in the timing phase,
// never a verdict on the target.
TEST(Judge, AFailureWhileTimingIsAnErrorOfTheTimingPhase) {
  const OneOutputWorkload w;
  const Sides s;
  FakeHost host(s.gold);  // its instantiate() throws: the reference to time cannot be made
  host.kept = ReferenceRerun{};
  CaseSides sides;
  sides.reference = {Output("out", s.reference)};
  sides.target = {Output("out", s.reference.clone())};
  sides.target_instance = std::make_unique<NoInstance>();
  CaseResult r;
  check_case(w, host, &sides, c10::Device(c10::kCPU), c10::kFloat, TimingPlan{0.01, false}, r);
  EXPECT_TRUE(r.timed);
  EXPECT_EQ(r.status, Status::Error);
  EXPECT_EQ(r.phase, "timing");
  EXPECT_NE(r.message.find("mpscheck failed while timing"), std::string::npos) << r.message;
  EXPECT_EQ(host.phases, (std::vector<std::string>{"comparison", "timing"}));
}

// A reference that gives one element differently in two runs (a reduction order, an atomic) says
// nothing about the other elements: a target wrong by a few times the tolerance at another element
// is a mismatch, in every dtype. The spread sits inside the bound that makes a reference no
// reference at all (AWildReferenceOrNoOutputIsAnErrorNotAVerdict), twenty times the tolerance, and
// before, the whole output's tolerance was widened to it, so the wrong element passed.
class JudgeWobble : public ::testing::TestWithParam<c10::ScalarType> {};

TEST_P(JudgeWobble, AReferenceThatWobblesAtOneElementExcusesNoOther) {
  const c10::ScalarType dtype = GetParam();
  const OneOutputWorkload w;
  const Tolerance tol = tolerance_for(w.family(), dtype);
  const at::Tensor gold = at::linspace(1, 2, 64, at::kDouble);
  const at::Tensor reference = gold.to(at::kFloat);
  const auto allowance = [&](std::int64_t i) { return tol.atol + tol.rtol * gold[i].item<double>(); };

  at::Tensor wobble = reference.clone();
  wobble[3] += 20 * allowance(3);
  FakeHost host(gold);
  host.again = Outputs{Output("out", wobble)};

  // The target: the reference in the dtype, with element 40 wrong by 3 tolerances (5% in bfloat16).
  at::Tensor target = reference.to(dtype, /*non_blocking=*/false, /*copy=*/true);
  target[40] = reference[40].item<double>() + 3 * allowance(40);
  CaseResult r;
  r.dtype = dtype_name(dtype);
  judge_sides(w, host, {Output("out", reference)}, {Output("out", target)}, c10::Device(c10::kCPU), dtype, tol, r);
  EXPECT_EQ(r.status, Status::Mismatch) << r.message;
  EXPECT_TRUE(r.nondeterministic);
  ASSERT_EQ(r.outputs.size(), 1U);
  EXPECT_EQ(r.outputs[0].first_mismatch, 40) << r.message;

  // The element the reference itself gave two ways is judged against the nearer of the two: a
  // target that took the second run's value there passes.
  at::Tensor took_second = reference.to(dtype, /*non_blocking=*/false, /*copy=*/true);
  took_second[3] = wobble[3].item<double>();
  CaseResult honest;
  honest.dtype = dtype_name(dtype);
  judge_sides(w, host, {Output("out", reference)}, {Output("out", took_second)}, c10::Device(c10::kCPU), dtype, tol,
              honest);
  EXPECT_EQ(honest.status, Status::Pass) << honest.message;
  EXPECT_TRUE(honest.nondeterministic);
}

INSTANTIATE_TEST_SUITE_P(EveryDtype, JudgeWobble, ::testing::Values(c10::kFloat, c10::kHalf, c10::kBFloat16),
                         [](const ::testing::TestParamInfo<c10::ScalarType>& p) { return dtype_name(p.param); });
