// Records the ATen calls a model makes in one run (issue 49 item 1): each distinct call's op and
// overload, its arguments' dtypes, shapes, strides, storage offsets and values (the tensors copied
// as the call found them), the module that made it and how many times it was made.
//
// The mechanism is at::RecordFunction: a thread-local callback that asks for the call's inputs. The
// dispatcher runs it on entry to every ATen op, whichever way the op is called: unboxed from C++
// (the zoo's models), boxed from the TorchScript interpreter, and from autograd's engine (a CPU
// backward runs on the thread that called backward()). Only top-level calls are kept, those that
// start while no other recorded op is running: what the model's code (or a backward node) called,
// not the kernels an op decomposes into, which the replay of that op runs again by itself. A boxed
// fallback on the dispatcher would see only ops that reach a backend key, after composites
// decomposed, and none of the module structure; a TorchScript graph walk would miss the zoo's C++
// models and every backward call.
//
// The module path: a TorchScript model's comes from the interpreter's module hierarchy; the zoo's
// from model::layer (a scope around one module's forward) and model::tap (which names the calls
// made since the previous tap), both sent as RecordFunction user scopes (include/mpscheck/model.hpp);
// a backward call's is the autograd node that made it.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mpscheck {

// One distinct call: what replaying it needs, and where and how often the model made it.
struct RecordedCall {
  std::string op;        // "aten::addmm"
  std::string overload;  // "" for the default overload, "Tensor" for add.Tensor
  // The op's schema, and its arguments as the first such call found them: tensors copied (dtype,
  // shape, strides and storage offset kept), everything else as passed.
  std::shared_ptr<c10::FunctionSchema> schema;
  std::vector<c10::IValue> args;
  std::string key;     // what makes two calls the same call (distinct_call_key)
  std::string module;  // the module that made the first such call ("layers.1", "backward of MmBackward0")
  int first_call = 0;  // 1-based index of that call among the top-level calls of the run
  int calls = 0;       // how many such calls the run made
  bool backward = false;
};

struct OpRecording {
  std::vector<RecordedCall> calls;  // distinct calls, in the order of their first call
  int top_level_calls = 0;          // every top-level ATen call the run made
  // Distinct calls not kept because the bound (kMaxRecordedCalls, kMaxRecordedBytes) was reached.
  int beyond_bound = 0;
  // Calls not replayable, by reason ("views", "random", "creates a tensor", ...), each with its ops.
  std::map<std::string, std::map<std::string, int>> not_replayable;
};

// At most this many distinct calls are kept per model run. Each replay runs the op alone about
// eight times (the reference twice, the target twice, float64, the rounded baseline, the CPU
// witness): 48 keeps a quick zoo model's replay near its own run's cost, and covers every distinct
// compute call of the zoo's quick models but the largest (a ResNet's forward has about 30).
inline constexpr int kMaxRecordedCalls = 48;
// ... and at most this many bytes of copied inputs (a large model's activations would hold the
// worker's memory otherwise).
inline constexpr std::int64_t kMaxRecordedBytes = std::int64_t{256} << 20;

// The key of a call: op, overload and every argument (tensors by dtype, shape, strides and storage
// offset; other values by their text).
std::string distinct_call_key(const c10::FunctionSchema& schema, c10::ArrayRef<const c10::IValue> args);

// Why a call is not replayed, or "" when it is: a view, a random op, a factory, a conversion, an op
// with no floating-point tensor input, one that returns something other than tensors.
std::string not_replayable_because(const c10::FunctionSchema& schema, c10::ArrayRef<const c10::IValue> args);

// Records while it lives, on this thread (and the autograd work it runs here). One at a time.
class OpRecorder {
 public:
  OpRecorder();
  ~OpRecorder();
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;
  // Stops recording and hands over what was recorded.
  OpRecording finish();

 private:
  at::CallbackHandle handle_ = 0;
};

// A tensor with `t`'s values, dtype, shape, strides and storage offset, in fresh memory with
// `options` (device, dtype). Undefined stays undefined.
at::Tensor copy_layout(const at::Tensor& t, const at::TensorOptions& options);

}  // namespace mpscheck
