// The messages a host reads from a worker, one JSON line each, parsed without LibTorch so the
// parser can be fuzzed on its own (tests/fuzz). Anything a worker sends is untrusted input: a
// line that is not what the protocol says is a ProtocolError, never a crash of the host.
#pragma once

#include "checks/result.hpp"
#include "core/target.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The first line the host sends: everything a worker needs before its first case.
struct WorkerConfig {
  TargetSpec target;  // resolved: never "auto"; sent as {"device":"sim","dtype":"bfloat16"}
  std::uint64_t seed = 0;
  bool quick = false;
  double min_time = 0;  // timing budget per side for the cases the host asks to time
  int threads = 0;      // 0: LibTorch's default
  // The threads a case's verdict (every phase but timing) is computed on; 0: LibTorch's default.
  int verdict_threads = 0;
  bool default_plugins = true;
  std::vector<std::string> plugin_dirs;  // absolute
  std::string model;                     // --model FILE.pt, absolute; empty: none
  std::vector<std::string> inputs;       // its --input specs
  std::vector<std::string> model_for;    // its --model-for DTYPE=FILE, FILE absolute
  std::string eager;                     // --eager FILE.pt, absolute; empty: none
  bool train = false;
  std::string reference_cache;  // --reference-cache DIR, absolute; empty: none
  bool reuse_reference_times = false;
  bool op_replay = true;
};
void to_json(nlohmann::json& j, const WorkerConfig& c);
void from_json(const nlohmann::json& j, WorkerConfig& c);

// One request line per case: which case, and whether to time it (the host's plan decides).
struct CaseRequest {
  std::string id;
  bool time = true;
};
void to_json(nlohmann::json& j, const CaseRequest& r);
void from_json(const nlohmann::json& j, CaseRequest& r);

// The first line after the config: {"ready":true,"cases":N} or {"ready":false,"error":"..."}.
struct WorkerReady {
  bool ok = false;
  std::size_t cases = 0;
  std::string error;  // why the worker could not start (a plugin it could not load, ...)
};
WorkerReady parse_ready_message(const std::string& line);

// While a case runs, the worker sends {"phase":"reference"} (and "target", "comparison",
// "float64", "localisation", "timing") as it enters each phase, before the result line; a worker
// that dies or hangs has then told the host whose run it was in. The phase's name when `line` is
// such a message, else empty (the line is then read as a result).
std::string parse_phase_message(const std::string& line);
std::string phase_message(const std::string& phase);

// Whether a crash or timeout in `phase` is the target's: only in the target's own run (and when
// no phase was reported at all, as from a worker that predates phases or died before its first).
bool phase_is_target(const std::string& phase);

// One result line: a CaseResult whose id must be `expected_id` (a stale or foreign answer is an
// error, not a result for the wrong case).
CaseResult parse_result_message(const std::string& line, const std::string& expected_id);

}  // namespace mpscheck
