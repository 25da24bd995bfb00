// The judge: one case's verdict once both sides have run. Every output by its own rule
// (compare.hpp), the reference's own spread, the float64 attribution of what fails (with the
// rounded baseline and, on accelerators, the CPU's own run in the target dtype as witnesses), the
// training family rule, fallback warnings, and the layer a failing model first diverges at. The
// host (core/execute.cpp) runs the sides and hands them to check_case, which judges and times the
// case and compares a later call with the first (checks/later_call.hpp); all of them ask the host
// for the other runs they need through CaseHost (checks/case_host.hpp) and never instantiate a
// workload themselves.
#pragma once

#include "checks/case_host.hpp"
#include "checks/result.hpp"
#include "checks/timed_rounds.hpp"
#include "checks/tolerance.hpp"

#include <mpscheck/workload.hpp>

#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mpscheck {

// Both sides of a case as the host ran them, with the instances the timing and the later call reuse.
struct CaseSides {
  Outputs reference, target;
  std::unique_ptr<Instance> reference_instance;  // empty when the reference came from the cache
  std::unique_ptr<Instance> target_instance;
};

// The one entry of checks/ for a case the host has run, whose result the host has identified (its
// dtype is `dtype`'s name, see core/execute.hpp identify): the result's tolerance; then,
// when both sides ran (`sides`; null when one could not, and r says why), judge_sides and, for a
// case that passed and is timed (`timing`), time_case; then, for a case that still passes,
// judge_later_call on the target instance; last the memory rule (checks/memory.hpp), whichever way
// the sides ended. What fails while judging or timing is mpscheck's own `error`, in the phase it
// happened in, never the target's; a later call that raises is the target's (phase `target`).
void check_case(const Workload& w, CaseHost& host, CaseSides* sides, c10::Device device, c10::ScalarType dtype,
                const TimingPlan& timing, CaseResult& r);

// The reference's own determinism, once per reference: a second fresh reference instance, kept
// with the host (CaseHost::keep_rerun) as the ReferenceRerun of the outputs it gives differently.
// The host runs it right after the first reference, before the target, so the two instances run
// in one state of the process and a target run between them (a sim training run, whose autograd
// device thread also drives LibTorch's threaded CPU kernels) cannot set them apart. judge_sides
// runs it if the host did not.
// Returns what it found (or what the host kept).
ReferenceRerun rerun_reference(const Workload& w, CaseHost& host, const Outputs& ref_out);

// Both sides have run: the reference's own determinism (once per reference: a second fresh
// reference instance, kept as the ReferenceRerun of the outputs it gives differently), then
// judge_case. A case with no output to compare, or a reference that differs from itself far beyond
// its tolerance, is an `error`, never a pass. May throw, as judge_case.
void judge_sides(const Workload& w, CaseHost& host, const Outputs& ref_out, const Outputs& tgt_out, c10::Device device,
                 c10::ScalarType dtype, const Tolerance& tol, CaseResult& r);

// Fills r.outputs, r.status, r.message, r.attribution and the layer fields from the reference's
// and the target's outputs. `rerun`: what a second fresh reference gave for the outputs it gave
// differently; a target element between the two runs' values where they disagree matches, one
// outside them is compared with the nearer end, every other element with the reference, and no
// tolerance is widened. A note that names the dtype quotes r.dtype, its name in the result (the
// host's identify sets it). May throw: the host turns that into an `error` of the phase it was in.
void judge_case(const Workload& w, CaseHost& host, const Outputs& ref_out, const Outputs& tgt_out, c10::Device device,
                c10::ScalarType dtype, const Tolerance& tol, const ReferenceRerun& rerun, CaseResult& r);

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
