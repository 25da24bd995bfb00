// The judge (checks/judge.hpp) behind its one seam, CaseHost: what it asks the host for, and when.
#include "checks/judge.hpp"

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
    if (again && where.side == Side::Reference) return *again;
    throw std::runtime_error("no other side in this test");
  }
  Outputs trace(const Placement&) override { return {}; }
  std::map<std::string, at::Tensor> gold() override {
    ++gold_calls;
    if (gold_fails_) throw std::runtime_error("float64 kernel missing");
    return {{"out", gold_}};
  }
  std::vector<std::string> target_warnings() override { return {}; }
  const std::map<std::string, double>* kept_spreads() override { return kept ? &*kept : nullptr; }
  void keep_spreads(const std::map<std::string, double>& spreads) override { kept = spreads; }
  std::string current_phase() override { return phases.empty() ? std::string() : phases.back(); }
  std::unique_ptr<Instance> instantiate(const Placement&) override { throw std::runtime_error("nothing timed here"); }
  void synchronize(const c10::Device&) override {}
  const TimingStats* kept_reference_time(double) override { return nullptr; }
  void keep_reference_time(const TimingStats&, double) override {}
  std::optional<Outputs> again;  // what a second reference instance gives; none: it throws
  std::optional<std::map<std::string, double>> kept;
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

// A reference that differed from itself is judged with that output's tolerance widened to the spread.
TEST(Judge, AReferenceSpreadWidensOnlyThatOutput) {
  const OneOutputWorkload w;
  const Sides s;
  FakeHost host(s.gold, /*gold_fails=*/true);
  CaseResult r;
  judge_case(w, host, {Output("out", s.reference)}, {Output("out", s.gold.to(at::kFloat))}, c10::Device(c10::kCPU),
             c10::kFloat, kTol, {{"out", 1e-3}}, r);
  EXPECT_EQ(r.status, Status::Pass) << r.message;
  EXPECT_TRUE(r.nondeterministic);
  EXPECT_EQ(host.gold_calls, 0);
}

// The reference's determinism is the judge's: a second fresh reference is asked of the host once,
// its spread kept with the reference, and a later case with kept spreads runs nothing more. An
// output the second reference gives differently is judged with its tolerance widened to that
// spread, so a target inside the spread passes and one beyond it does not.
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
  EXPECT_NEAR(host.kept->at("out"), 2e-4, 1e-6);
  EXPECT_EQ(host.phases, (std::vector<std::string>{"reference", "comparison"}));

  at::Tensor beyond = s.reference.clone();
  beyond[3] += 1e-2;  // 25 times the widened allowance, and ten times float32's own error at [7]
  CaseResult again;
  judge_sides(w, host, {Output("out", s.reference)}, {Output("out", beyond)}, c10::Device(c10::kCPU), c10::kFloat, kTol,
              again);
  EXPECT_EQ(again.status, Status::Mismatch) << again.message;
  EXPECT_EQ(host.runs, 1) << "kept spreads are not measured again";
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
  empty.kept = std::map<std::string, double>{};
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
  host.kept = std::map<std::string, double>{};
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
