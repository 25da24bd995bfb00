#include "core/journal.hpp"

#include <fmt/format.h>

namespace mpscheck {

JournalContents read_journal(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw JournalError(fmt::format("cannot read the journal {}: no earlier run to resume there", path));
  JournalContents c;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    try {
      auto j = nlohmann::json::parse(line);
      if (n == 1) {
        if (!j.contains("mpscheck_journal")) throw JournalError("no header");
        c.header = std::move(j);
      } else {
        c.results.push_back(j.get<CaseResult>());
      }
    } catch (const std::exception&) {
      if (n == 1) throw JournalError(fmt::format("{} is not an mpscheck journal (line 1 is not its header)", path));
      ++c.damaged_lines;
    }
  }
  if (c.header.is_null()) throw JournalError(fmt::format("{} is empty: no earlier run to resume there", path));
  return c;
}

Journal::Journal(const std::string& path, const nlohmann::json& header, bool resume) : path_(path) {
  out_.open(path, resume ? std::ios::app : std::ios::trunc);
  if (!out_) throw JournalError(fmt::format("cannot write the journal {}; check the report folder", path));
  if (!resume) {
    out_ << header.dump() << '\n';
    out_.flush();
  } else {
    out_ << '\n';  // ends a half-written line left by a killed run; empty lines are skipped
    out_.flush();
  }
}

void Journal::append(const CaseResult& result) {
  out_ << nlohmann::json(result).dump() << '\n';
  out_.flush();
}

}  // namespace mpscheck
