// Every call is the same call (DESIGN.md §5): a case that passed is called once more on the same
// target instance (after its last timed call, or a second time when it is not timed), and that
// later call must give what its first call gave: the same values, exactly, where the CPU reference
// gives the same on every call; within the reference's own spread between calls where it does not.
// A device bug that lives in a cache (a packed weight, a compiled graph, a stale buffer) shows only
// from the second call on, and a case judged on its first call alone never sees it.
#pragma once

#include "checks/case_host.hpp"
#include "checks/result.hpp"

#include <mpscheck/workload.hpp>

#include <memory>
#include <string>

namespace mpscheck {

// An instance that counts the calls made on it (run() and iterate() alike), so that a later call's
// finding can say which call it was. Wraps the target instance while it is timed.
class CountedCalls final : public Instance {
 public:
  // `made`: the calls the instance has made already (its first, when the judge has its outputs).
  CountedCalls(Instance& inner, int made) : inner_(inner), calls_(made) {}
  Outputs run() override {
    ++calls_;
    return inner_.run();
  }
  void iterate() override {
    ++calls_;
    inner_.iterate();
  }
  Outputs trace_layers() override { return inner_.trace_layers(); }
  LayerCall layer_call(const std::string& layer, int call) override { return inner_.layer_call(layer, call); }
  int calls() const { return calls_; }

 private:
  Instance& inner_;
  int calls_;
};

// The runs the rule reads: the target instance and the first call's outputs it gave, with the
// calls made on it so far; the reference's first call and, when there is one, the reference
// instance (made through the host when the rule needs it and there is none).
struct CallSides {
  const Outputs& target_first;
  CountedCalls target;
  const Outputs& reference_first;
  std::unique_ptr<Instance>& reference;
  // Whether `reference_first` is `reference`'s own first call (false for a cached reference, or an
  // instance the timing made): then the reference's spread is read between two calls of its own.
  bool reference_first_is_its_call = false;
};

// The spread allowed a target whose later call differs from its first where the CPU reference's
// calls differ too: this many times the reference's largest difference between its calls, in
// units of the target dtype's rounding (float32's for float32). Two draws of one nondeterministic
// sum (atomics, a thread count) land apart by about the same amount each time; a factor of two
// covers one draw landing wider than the other, and a wrong later call is far outside it.
constexpr double kLaterCallSpreadMultiple = 2;

// Calls the target once more, compares that call with the first, and records what it found in
// r.later_call. A change the reference does not show is a `mismatch` with a message that names the
// call ("call 3 differs from call 1 in out: ..."), the attribution is the target's, and any times
// are dropped (a wrong answer's speed means nothing). Random outputs are compared by their
// statistics and index outputs by what they select, as the judge compares them with the
// reference. Not compared, with the reason in r.later_call: a training case's trajectory (its
// later calls are its later steps, each already compared with the reference's, and a second call
// trains the network again from the start), and an output whose reference changes between calls
// by more than its tolerance (a case that writes its own inputs or state on every call). A later
// call that raises is the target's failure: its status is what the message classifies as, in the
// "target" phase. May throw when the reference, run again, does.
void judge_later_call(const Workload& w, CaseHost& host, CallSides& sides, c10::ScalarType dtype, CaseResult& r);

}  // namespace mpscheck
