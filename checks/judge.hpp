// The judge: one case's verdict once both sides have run. Every output by its own rule
// (compare.hpp), the reference's own spread, the float64 attribution of what fails (with the
// rounded baseline and, on accelerators, the CPU's own run in the target dtype as witnesses), the
// training family rule, fallback warnings, and the layer a failing model first diverges at. The
// host (core/execute.cpp) runs the sides; the judge asks it for the other runs it needs through
// CaseHost and never instantiates a workload itself.
#pragma once

#include "checks/result.hpp"
#include "checks/tolerance.hpp"

#include <mpscheck/workload.hpp>

#include <exception>
#include <map>
#include <string>
#include <vector>

namespace mpscheck {

// What the judge asks of the host that runs the case.
class CaseHost {
 public:
  virtual ~CaseHost() = default;
  // The judge enters a phase ("float64", "localisation"): the host charges a crash or a timeout
  // to it, and tags warnings with the side that phase runs.
  virtual void enter_phase(const char* phase) = 0;
  // The outputs of a fresh instance at `where`, owned (see owned()). Throws what the run throws.
  virtual Outputs run(const Placement& where, const char* what) = 0;
  // The layer trace of a fresh instance at `where`. Throws what the trace throws.
  virtual Outputs trace(const Placement& where) = 0;
  // The CPU float64 gold outputs: the host's cached run, or one run now and kept. Throws what the
  // run throws.
  virtual std::map<std::string, at::Tensor> gold() = 0;
  // The warnings the target raised while it ran (a CPU fallback shows there).
  virtual std::vector<std::string> target_warnings() = 0;
  // The reference's spreads (see judge_sides), measured once per reference and kept with it:
  // what the host kept, or nullptr when they were never measured.
  virtual const std::map<std::string, double>* kept_spreads() = 0;
  virtual void keep_spreads(const std::map<std::string, double>& spreads) = 0;
};

// Both sides have run: the reference's own determinism (once per reference: a second fresh
// reference instance, and each output it gives differently is widened to that spread), then
// judge_case. A case with no output to compare, or a reference that differs from itself far beyond
// its tolerance, is an `error`, never a pass. May throw, as judge_case.
void judge_sides(const Workload& w, CaseHost& host, const Outputs& ref_out, const Outputs& tgt_out, c10::Device device,
                 c10::ScalarType dtype, const Tolerance& tol, CaseResult& r);

// Fills r.outputs, r.status, r.message, r.attribution and the layer fields from the reference's
// and the target's outputs. `spreads`: outputs the reference gave differently in two fresh runs,
// by their largest difference; each is judged with its tolerance widened to that spread. May
// throw: the host turns that into an `error` of the phase it was in.
void judge_case(const Workload& w, CaseHost& host, const Outputs& ref_out, const Outputs& tgt_out, c10::Device device,
                c10::ScalarType dtype, const Tolerance& tol, const std::map<std::string, double>& spreads,
                CaseResult& r);

// The text of an exception in flight, tidied (no C++ backtrace).
std::string exception_text(std::exception_ptr p);

std::map<std::string, at::Tensor> by_name(const Outputs& outs);
std::map<std::string, const Output*> outputs_by_name(const Outputs& outs);

// Outputs owned by the caller: cloned right after run() returns, before anything else runs on
// that instance. run() may mutate its inputs (x.sub_(0.5)) and return a view of them (x.mul_(2);
// return x): without the copy, a second run on the same instance would rewrite the first run's
// outputs. Done on the host side of the plugin boundary, so every plugin's outputs are covered.
// Two outputs with one name would hide each other in every by-name map: refused.
Outputs owned(Outputs outs, const char* side);

}  // namespace mpscheck
