// libFuzzer: the lines a host reads from a worker (ready message, phase lines, case results). Anything a
// worker sends either parses or is a ProtocolError.
#include "core/worker_protocol.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  try {
    mpscheck::parse_ready_message(line);
  } catch (const mpscheck::ProtocolError&) {
  }
  try {
    mpscheck::parse_phase_message(line);
  } catch (const mpscheck::ProtocolError&) {
  }
  try {
    const mpscheck::CaseResult r = mpscheck::parse_result_message(line, "op/faults/healthy");
    if (r.id != "op/faults/healthy") __builtin_trap();
    nlohmann::json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const mpscheck::ProtocolError&) {
  }
  return 0;
}
