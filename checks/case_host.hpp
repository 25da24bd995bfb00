// What checks/ asks of the host that runs a case: the judge (checks/judge.hpp) and the timing
// (checks/timed_rounds.hpp) never instantiate a workload themselves, nor keep anything between
// runs: the other runs they need, the device's synchronisation and what is kept with the cached
// reference come through here.
#pragma once

#include "checks/result.hpp"

#include <mpscheck/workload.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mpscheck {

// What a second, fresh CPU float32 reference instance gave for each output it gave differently
// from the first (empty: the reference is deterministic). A target element is judged against the
// interval the two runs span there (nothing wider where they agree: judge_case).
using ReferenceRerun = std::map<std::string, at::Tensor>;

class CaseHost {
 public:
  virtual ~CaseHost() = default;
  // The judge or the timing enters a phase ("reference", "comparison", "float64", "localisation",
  // "timing"): the host charges a crash or a timeout to it, and tags warnings with the side that
  // phase runs (timing records none).
  virtual void enter_phase(const char* phase) = 0;
  // The phase the case is in: the last one entered, here or by the host.
  virtual std::string current_phase() = 0;
  // The outputs of a fresh instance at `where`, owned (see owned()). Throws what the run throws.
  virtual Outputs run(const Placement& where, const char* what) = 0;
  // The layer trace of a fresh instance at `where`. Throws what the trace throws.
  virtual Outputs trace(const Placement& where) = 0;
  // The CPU float64 gold outputs: the host's cached run, or one run now and kept. Throws what the
  // run throws.
  virtual std::map<std::string, at::Tensor> gold() = 0;
  // The warnings the target raised while it ran (a CPU fallback shows there).
  virtual std::vector<std::string> target_warnings() = 0;
  // The reference's rerun (see judge_sides), run once per reference and kept with it: what the
  // host kept, or nullptr when the reference was never run twice.
  virtual const ReferenceRerun* kept_rerun() = 0;
  virtual void keep_rerun(const ReferenceRerun& rerun) = 0;

  // For timing. A fresh instance at `where`, to be timed. Throws what instantiating throws.
  virtual std::unique_ptr<Instance> instantiate(const Placement& where) = 0;
  // Waits until the work queued on `device` is done (nothing to wait for on the CPU).
  virtual void synchronize(const c10::Device& device) = 0;
  // The reference's time as a round with `budget_s` per side measured it, kept with the
  // reference: nullptr when none was kept for that budget.
  virtual const TimingStats* kept_reference_time(double budget_s) = 0;
  virtual void keep_reference_time(const TimingStats& time, double budget_s) = 0;
};

}  // namespace mpscheck
