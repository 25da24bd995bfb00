#include "core/journal.hpp"

#include "checks/result_json.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <utility>
#include <sys/stat.h>
#include <unistd.h>

namespace mpscheck {

JournalContents parse_journal(const std::string& text, const std::string& path) {
  JournalContents c;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (n == 1) {
      if (j.is_discarded() || !j.is_object() || !j.contains("mpscheck_journal"))
        throw JournalError(fmt::format("{} is not an mpscheck journal (line 1 is not its header)", path));
      c.header = std::move(j);
      continue;
    }
    try {
      if (j.is_discarded() || !j.is_object() || !bad_result_integer_field(j).empty())
        throw std::invalid_argument("not a result");
      c.results.push_back(j.get<CaseResult>());
      const auto source = j.find("source");
      c.sources[c.results.back().id] = source != j.end() && source->is_string() ? source->get<std::string>() : "";
    } catch (const std::exception&) {
      ++c.damaged_lines;
    }
  }
  if (c.header.is_null()) throw JournalError(fmt::format("{} is empty: no earlier run to resume there", path));
  return c;
}

JournalContents read_journal(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw JournalError(fmt::format("cannot read the journal {}: no earlier run to resume there", path));
  std::stringstream s;
  s << in.rdbuf();
  return parse_journal(s.str(), path);
}

Journal::Journal(const std::string& path, const nlohmann::json& header, bool resume,
                 std::map<std::string, std::string> sources)
    : path_(path), sources_(std::move(sources)) {
  // Close-on-exec: a worker must never hold the journal open.
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (resume ? 0 : O_TRUNC), 0644);
  if (fd_ < 0)
    throw JournalError(
        fmt::format("cannot write the journal {}: {}; check the report folder", path, std::strerror(errno)));
  // A resumed journal may end in a half-written line of a killed run; a newline ends it (empty lines are skipped).
  write_line(resume ? std::string() : header.dump());
  last_sync_ = std::chrono::steady_clock::now();
}

Journal::~Journal() {
  if (fd_ >= 0) {
    ::fsync(fd_);
    ::close(fd_);
  }
}

void Journal::write_line(const std::string& text) {
  struct stat sb {};
  const off_t before = ::fstat(fd_, &sb) == 0 ? sb.st_size : -1;
  const std::string line = text + '\n';
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      if (before >= 0 && ::ftruncate(fd_, before) != 0) {
      }  // best effort: a torn line is also skipped (and counted) by --resume
      throw JournalError(fmt::format("cannot write the journal {}: {}", path_, std::strerror(err)));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void Journal::append(const CaseResult& result) {
  nlohmann::json line(result);
  if (const auto source = sources_.find(result.id); source != sources_.end()) line["source"] = source->second;
  write_line(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  ++appended_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_sync_ >= kSyncInterval) {
    ::fsync(fd_);
    last_sync_ = now;
  }
}

void Journal::case_finished(size_t, size_t, const CaseResult& result) {
  try {
    append(result);
  } catch (const JournalError& e) {
    throw RunStopped(fmt::format(
        "{}; stopped: the {} cases finished before it are kept there; free space, then run the same command with "
        "--resume",
        e.what(), appended_));
  }
}

}  // namespace mpscheck
