// One recorded ATen call of a model (core/op_record.hpp) as an op case of its own: its inputs are
// the reference's values at that call, floating ones in the dtype the side computes in, with the
// recorded shapes, strides and storage offsets; its outputs are what the op returns (and the
// arguments it writes in place). The judge (checks/judge.hpp check_case) then gives it the rules
// every catalog op case gets.
#pragma once

#include "core/op_record.hpp"

#include <mpscheck/workload.hpp>

#include <memory>
#include <string>

namespace mpscheck {

class OpCallWorkload final : public Workload {
 public:
  // `id`: "model/<name>/<mode>/ops/<n>"; the call must outlive the workload.
  OpCallWorkload(std::string id, const RecordedCall& call) : id_(std::move(id)), call_(call) {}
  std::string id() const override { return id_; }
  Kind kind() const override { return Kind::Op; }
  std::string family() const override;
  std::unique_ptr<Instance> instantiate(const Setup& setup, const Placement& where) const override;
  // A one-op script: the call's inputs drawn from a seed (small tensors spelt out exactly), then the
  // op on the CPU in float64, float32, honest rounding in the target dtype, and on the target.
  std::string reproducer(const ReproTarget& target) const override;

  const RecordedCall& call() const { return call_; }

 private:
  std::string id_;
  const RecordedCall& call_;
};

// The tolerance family of an ATen op ("aten::addmm" -> "matmul"), as the catalog's cases of that op
// declare it; "elementwise" for an op none of them names.
std::string op_family(const std::string& op);

// The call's tensors in words: "float32[64, 32], float32[16, 32] strides (1, 16)" (strides and
// offsets only where they are not a contiguous tensor's).
std::string describe_arguments(const RecordedCall& call);

// The one-op reproducer of `call` (core/op_call_script.cpp) on `target`, judging the op's output
// number `output` (its first when it returns one), for the model case `case_id`; `finding` is what
// mpscheck's replay found there, quoted in the script's verdict.
std::string op_call_script(const RecordedCall& call, const ReproTarget& target, size_t output,
                           const std::string& case_id, const std::string& finding);

// Whether every tensor argument is contiguous and starts its storage.
bool contiguous_arguments(const RecordedCall& call);

}  // namespace mpscheck
