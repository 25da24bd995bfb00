// libFuzzer: host text on its way into JSON (issue 23 item 6). Any bytes as argv, a path or an
// environment value: the repaired JSON dumps with nlohmann's strict writer (which throws on
// invalid UTF-8, what aborted the host), and a refusal is one UTF-8 line.
#include "core/host_text.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string half = text.substr(0, size / 2);
  nlohmann::json j = {{"command", text}, {half, {text, 1, {{text, half}}}}};
  const nlohmann::json repaired = mpscheck::valid_utf8_json(j);
  (void)repaired.dump();  // throws (and the fuzzer reports it) on any invalid byte left
  if (const auto refusal = mpscheck::not_utf8("--model", text)) {
    if (refusal->find('\n') != std::string::npos) __builtin_trap();
    (void)nlohmann::json(*refusal).dump();
  } else if (nlohmann::json(text).dump().empty()) {
    __builtin_trap();
  }
  return 0;
}
