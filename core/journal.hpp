// The run journal: one JSON line per finished case, written with one write() the moment it exists,
// so a killed host loses nothing and `--resume` continues it. The first line records what the run
// was. No LibTorch in here: the reader is fuzzed on its own (tests/fuzz).
#pragma once

#include "checks/result.hpp"
#include "reports/run_listener.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

struct JournalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The journal's format: 2 records the run's identity in the header (the LibTorch build, threads,
// --jobs) and each case's source (core/torchscript_workload.hpp case_source) in its line.
inline constexpr int kJournalFormat = 2;

struct JournalContents {
  nlohmann::json header;
  std::vector<CaseResult> results;
  std::map<std::string, std::string> sources;  // case id -> the source its latest line records
  int damaged_lines = 0;                       // e.g. a half-written last line of a killed run
};

// Reads a journal; throws JournalError when the file is missing or has no header.
JournalContents read_journal(const std::string& path);
// The same from the file's text; `path` only names it in messages.
JournalContents parse_journal(const std::string& text, const std::string& path);

// Also a run's listener, the first one core/app.cpp adds: each case is in the file before any
// other listener hears of it.
class Journal final : public RunListener {
 public:
  // Starts a new journal (truncating) or, with resume, appends to an existing one. Throws JournalError.
  // `sources`: each case's source, written beside its result.
  Journal(const std::string& path, const nlohmann::json& header, bool resume,
          std::map<std::string, std::string> sources = {});
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Appends one line. Throws JournalError (disk full, file-size limit, I/O error) after cutting
  // off whatever part of the line got written, so every earlier line stays whole.
  void append(const CaseResult& result);
  int appended() const { return appended_; }
  // Appends the case; a failed write becomes RunStopped, whose line says how many cases the
  // journal kept and how to go on.
  void case_finished(size_t position, size_t total, const CaseResult& result) override;

  // write() alone survives a killed process (the data is in the kernel); fsync also survives a
  // power cut but costs ~3.5 ms here, so it runs at most once per interval, and at the end.
  static constexpr std::chrono::milliseconds kSyncInterval{1000};

 private:
  void write_line(const std::string& line);
  int fd_ = -1;
  std::string path_;
  std::map<std::string, std::string> sources_;
  int appended_ = 0;
  std::chrono::steady_clock::time_point last_sync_;
};

}  // namespace mpscheck
