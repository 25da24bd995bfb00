// The messages a host reads from a worker, one JSON line each, parsed without LibTorch so the
// parser can be fuzzed on its own (tests/fuzz). Anything a worker sends is untrusted input: a
// line that is not what the protocol says is a ProtocolError, never a crash of the host.
#pragma once

#include "core/result.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace mpscheck {

struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The first line after the config: {"ready":true,"cases":N} or {"ready":false,"error":"..."}.
struct WorkerReady {
  bool ok = false;
  std::size_t cases = 0;
  std::string error;  // why the worker could not start (a plugin it could not load, ...)
};
WorkerReady parse_ready_message(const std::string& line);

// One result line: a CaseResult whose id must be `expected_id` (a stale or foreign answer is an
// error, not a result for the wrong case).
CaseResult parse_result_message(const std::string& line, const std::string& expected_id);

}  // namespace mpscheck
