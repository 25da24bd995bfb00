// The run journal: one JSON line per finished case, flushed the moment it exists, so a killed
// run loses nothing and `--resume` continues it. The first line records what the run was.
#pragma once

#include "core/result.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

struct JournalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct JournalContents {
  nlohmann::json header;
  std::vector<CaseResult> results;
  int damaged_lines = 0;  // e.g. a half-written last line of a killed run
};

// Reads a journal; throws JournalError when the file is missing or has no header.
JournalContents read_journal(const std::string& path);

class Journal {
 public:
  // Starts a new journal (truncating) or, with resume, appends to an existing one.
  Journal(const std::string& path, const nlohmann::json& header, bool resume);
  void append(const CaseResult& result);

 private:
  std::ofstream out_;
  std::string path_;
};

}  // namespace mpscheck
