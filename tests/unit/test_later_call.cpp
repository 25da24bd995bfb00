// Every call is the same call (checks/later_call.hpp), through check_case, checks/'s one entry: a
// target right on its first call and wrong on a later one is a mismatch that names the call, in
// every dtype; a target that gives the same again passes; a reference that differs between its own
// calls decides how far a target's calls may differ, or whether they can be compared at all.
#include "checks/judge.hpp"

#include "checks/compare.hpp"
#include "checks/tolerance.hpp"
#include <mpscheck/dtype_names.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

using namespace mpscheck;

namespace {

// The outputs of one call (0-based, counted per instance) on one placement.
using Body = std::function<Outputs(int call, const Placement& where)>;

class CallInstance final : public Instance {
 public:
  CallInstance(Body body, Placement where, int* calls) : body_(std::move(body)), where_(where), calls_(calls) {}
  Outputs run() override {
    ++*calls_;
    return body_(call_++, where_);
  }

 private:
  Body body_;
  Placement where_;
  int call_ = 0;
  int* calls_;  // every call on every instance of the workload, for the test to read
};

class CallWorkload final : public Workload {
 public:
  CallWorkload(Body body, bool random = false) : body_(std::move(body)), random_(random) {}
  std::string id() const override { return "op/test/later_call/f32/contiguous/forward"; }
  Kind kind() const override { return Kind::Op; }
  bool is_random() const override { return random_; }
  bool has_gold() const override { return !random_; }
  std::unique_ptr<Instance> instantiate(const Setup&, const Placement& where) const override {
    return std::make_unique<CallInstance>(body_, where, &calls);
  }
  mutable int calls = 0;

 private:
  Body body_;
  bool random_;
};

// A host that makes instances of the workload, hands out float64 gold from the reference's own
// body, and keeps the reference's rerun as the worker does.
class WorkloadHost final : public CaseHost {
 public:
  explicit WorkloadHost(const Workload& w) : w_(w) {}
  void enter_phase(const char* phase) override { phases.emplace_back(phase); }
  std::string current_phase() override { return phases.empty() ? std::string() : phases.back(); }
  Outputs run(const Placement& where, const char* what) override { return owned(instantiate(where)->run(), what); }
  Outputs trace(const Placement&) override { return {}; }
  std::map<std::string, at::Tensor> gold() override {
    return by_name(run(Placement{c10::Device(c10::kCPU), c10::kDouble, Side::Gold}, "gold"));
  }
  std::vector<std::string> target_warnings() override { return {}; }
  const ReferenceRerun* kept_rerun() override { return kept ? &*kept : nullptr; }
  void keep_rerun(const ReferenceRerun& rerun) override { kept = rerun; }
  std::unique_ptr<Instance> instantiate(const Placement& where) override { return w_.instantiate(Setup{}, where); }
  void synchronize(const c10::Device&) override {}
  const TimingStats* kept_reference_time(double) override { return nullptr; }
  void keep_reference_time(const TimingStats&, double) override {}
  std::optional<ReferenceRerun> kept;
  std::vector<std::string> phases;

 private:
  const Workload& w_;
};

// The case run as the worker runs it (both sides once, then check_case), on the CPU in `dtype`.
CaseResult check(const Workload& w, c10::ScalarType dtype, double budget_s = 0) {
  WorkloadHost host(w);
  CaseSides sides;
  sides.reference_instance = w.instantiate(Setup{}, Placement{c10::Device(c10::kCPU), c10::kFloat, Side::Reference});
  sides.reference = owned(sides.reference_instance->run(), "reference");
  sides.target_instance = w.instantiate(Setup{}, Placement{c10::Device(c10::kCPU), dtype, Side::Target});
  sides.target = owned(sides.target_instance->run(), "target");
  CaseResult r;
  r.dtype = dtype_name(dtype);
  check_case(w, host, &sides, c10::Device(c10::kCPU), dtype, TimingPlan{budget_s, false}, r);
  return r;
}

// 64 values from 1 to 2 in the placement's dtype, on the target 5% larger from `wrong_from` on.
Body linspace_body(int wrong_from) {
  return [wrong_from](int call, const Placement& where) {
    at::Tensor out = at::linspace(1, 2, 64, at::kDouble).to(where.dtype);
    if (where.side == Side::Target && call >= wrong_from) out = out * 1.05;
    return Outputs{Output("out", out)};
  };
}

constexpr int kNever = 1 << 30;

class LaterCall : public ::testing::TestWithParam<c10::ScalarType> {};

// Judged on its first call alone (before checks/later_call.hpp), this target passed in every dtype.
TEST_P(LaterCall, AResultThatChangesAfterTheFirstCallIsAMismatchThatNamesTheCall) {
  const CallWorkload w(linspace_body(1));
  const CaseResult r = check(w, GetParam());
  EXPECT_EQ(r.status, Status::Mismatch) << r.message;
  EXPECT_EQ(r.message.rfind("call 2 differs from call 1 in out: 64 of 64 elements differ", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("first at [0]"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("the CPU reference gives the same on every call"), std::string::npos) << r.message;
  EXPECT_EQ(r.attribution, Fragile::Target);
}

TEST_P(LaterCall, ATargetThatGivesTheSameAgainPasses) {
  const CallWorkload w(linspace_body(kNever));
  const CaseResult r = check(w, GetParam());
  EXPECT_EQ(r.status, Status::Pass) << r.message;
  EXPECT_EQ(r.later_call, "call 2 equals call 1");
  // The reference, its fresh rerun and the target, then the target once more: the reference's own
  // calls are measured only when the target's differ.
  EXPECT_EQ(w.calls, 4);
}

// A timed case: its later call comes after the timed ones, and the finding names it and drops the
// times a wrong answer's speed would claim.
TEST_P(LaterCall, ATimedCaseComparesTheCallAfterItsTimedOnes) {
  const CallWorkload w(linspace_body(3));
  const CaseResult r = check(w, GetParam(), /*budget_s=*/0.002);
  EXPECT_EQ(r.status, Status::Mismatch) << r.message;
  const int call = std::stoi(r.message.substr(std::string("call ").size()));
  EXPECT_GT(call, 4) << r.message;
  EXPECT_EQ(r.later_call, "call " + std::to_string(call) + " differs from call 1 in out");
  EXPECT_FALSE(r.target_time.has_value());
  EXPECT_EQ(r.speedup, 0);

  const CallWorkload honest(linspace_body(kNever));
  const CaseResult h = check(honest, GetParam(), /*budget_s=*/0.002);
  EXPECT_EQ(h.status, Status::Pass) << h.message;
  EXPECT_TRUE(h.target_time.has_value());
  EXPECT_NE(h.later_call.find(" equals call 1"), std::string::npos) << h.later_call;
  EXPECT_NE(h.later_call, "call 2 equals call 1");
}

// A reference whose element 9 moves between its own calls (a sum whose order changes) lets the
// target's calls differ there by up to twice as much, in the target dtype's units; a target that
// differs by far more is still a finding.
TEST_P(LaterCall, AReferenceThatMovesBetweenItsCallsSetsTheSpreadAllowed) {
  const c10::ScalarType dtype = GetParam();
  const double unit = unit_roundoff(dtype) / unit_roundoff(c10::kFloat);
  const double spread = 4e-7;  // a few float32 units at 1.1, inside float32's tolerance there
  auto body = [=](double target_moves) {
    return [=](int call, const Placement& where) {
      at::Tensor out = at::linspace(1, 2, 64, at::kDouble);
      if (call % 2 == 1) out[9] += where.side == Side::Target ? target_moves : spread;
      return Outputs{Output("out", out.to(where.dtype))};
    };
  };
  const CallWorkload honest(body(1.5 * spread * unit));
  const CaseResult h = check(honest, dtype);
  EXPECT_EQ(h.status, Status::Pass) << h.message;
  EXPECT_EQ(h.later_call.rfind("call 2 agrees with call 1: out within the CPU reference's own spread", 0), 0u)
      << h.later_call;

  const CallWorkload wrong(body(40 * spread * unit));
  const CaseResult r = check(wrong, dtype);
  EXPECT_EQ(r.status, Status::Mismatch) << r.message;
  EXPECT_NE(r.message.find("the CPU reference's own calls differ by up to"), std::string::npos) << r.message;
}

// A case whose every call changes its own inputs (x.add_(1); return x) gives another result on each
// call, the reference as much as the target: its later call cannot be compared with its first.
TEST_P(LaterCall, ACaseThatWritesItsOwnInputsIsNotComparedAndSaysSo) {
  const CallWorkload w([](int call, const Placement& where) {
    return Outputs{Output("out", (at::linspace(1, 2, 64, at::kDouble) + call).to(where.dtype))};
  });
  const CaseResult r = check(w, GetParam());
  EXPECT_EQ(r.status, Status::Pass) << r.message;
  EXPECT_EQ(r.later_call.rfind("call 2 not compared with call 1: out: the CPU reference's own calls differ by 1 ", 0),
            0u)
      << r.later_call;
}

INSTANTIATE_TEST_SUITE_P(EveryDtype, LaterCall, ::testing::Values(c10::kFloat, c10::kHalf, c10::kBFloat16),
                         [](const ::testing::TestParamInfo<c10::ScalarType>& p) { return dtype_name(p.param); });

// A training case's later calls are its later steps, already compared with the reference's: the
// target is not called again.
TEST(LaterCallTraining, ATrajectoryIsNotCalledAgain) {
  const CallWorkload w([](int call, const Placement& where) {
    at::Tensor loss = at::full({}, 2.0 + call, at::TensorOptions().dtype(where.dtype));
    return Outputs{Output("loss/step0", loss)};
  });
  const CaseResult r = check(w, c10::kFloat);
  EXPECT_EQ(r.status, Status::Pass) << r.message;
  EXPECT_EQ(w.calls, 3);  // the reference, its fresh rerun and the target: no later call
  EXPECT_EQ(r.later_call.rfind("not compared: a training case's later calls are its later steps", 0), 0u)
      << r.later_call;
}

// Random samples are compared by their statistics, never by value: a later call's fresh sample of
// the same distribution passes, one whose mean moved by 50 standard errors does not.
TEST(LaterCallRandom, SamplesAreComparedByTheirStatistics) {
  auto body = [](double later_shift) {
    return [=](int call, const Placement& where) {
      at::Tensor mean = at::full({1}, 0.5 + (call % 2) * 3e-4, at::kDouble);  // a new sample each call
      if (where.side == Side::Target && call > 0) mean += later_shift;
      Output o("out", mean.to(where.dtype == c10::kDouble ? c10::kDouble : c10::kFloat));
      o.standard_error = at::full({1}, 1e-3, at::kFloat);
      return Outputs{o};
    };
  };
  const CallWorkload fresh_sample(body(0), /*random=*/true);
  const CaseResult h = check(fresh_sample, c10::kFloat);
  EXPECT_EQ(h.status, Status::Pass) << h.message;
  EXPECT_EQ(h.later_call, "call 2 agrees with call 1: out by its statistics");

  const CallWorkload moved(body(0.05), /*random=*/true);
  const CaseResult r = check(moved, c10::kFloat);
  EXPECT_EQ(r.status, Status::Mismatch) << r.message;
  EXPECT_EQ(r.message.rfind("call 2 differs from call 1 in out", 0), 0u) << r.message;
}

}  // namespace
