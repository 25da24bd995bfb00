// libFuzzer: the journal as `--resume` reads it. Any text either reads (damaged lines counted, never
// fatal) or is a JournalError about the header.
#include "core/journal.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const mpscheck::JournalContents c = mpscheck::parse_journal(text, "journal.jsonl");
    if (c.damaged_lines < 0) __builtin_trap();
    for (const auto& r : c.results) nlohmann::json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const mpscheck::JournalError&) {
  }
  return 0;
}
