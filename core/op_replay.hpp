// A model, op by op (issue 49): its ATen calls recorded in a CPU float32 reference run
// (core/op_record.hpp), each distinct call replayed alone on the target as an op case of its own
// (core/op_call_workload.hpp, run through execute_case, so the judge's op rules, the float64 gold,
// the honest baseline and witness and the later call all apply), and the model's verdict led by
// what the calls show. The network's own comparison stays, for what only the network shows.
#pragma once

#include "checks/result.hpp"
#include "core/execute.hpp"

namespace mpscheck {

// Whether `r`, the result of model case `w`, gets its calls replayed: a model case whose CPU
// reference ran (a reference that fails says nothing of the target's ops).
bool wants_op_replay(const Workload& w, const CaseResult& r, const ExecuteOptions& options);

// Records and replays `rw`'s calls, fills r.op_replay and leads r's verdict with the calls found
// wrong: a network that passed becomes the first wrong call's status. Never throws: a recording
// that fails is the replay's note, and the network's verdict stands alone.
void replay_model_ops(const RegisteredWorkload& rw, const ExecuteOptions& options, CaseResult& r);

// Leads r's verdict with its replay's findings (separate for the tests): a network that passed takes
// the first wrong call's status; one that failed with no call wrong alone says the network diverges
// by compounding, and at which layer first.
void lead_with_ops(CaseResult& r);

}  // namespace mpscheck
