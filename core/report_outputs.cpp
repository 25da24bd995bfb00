#include "core/report_outputs.hpp"

#include "util/atomic_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace mpscheck::app {

std::optional<std::string> unwritable_file(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  if (fs::is_directory(target, ec)) return fmt::format("{} {}: that is a folder; give a file name", flag, path);
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec)
      return fmt::format("{} {}: cannot create its folder ({}); choose a writable path", flag, path, ec.message());
  }
  const std::string probe = fmt::format("{}.probe.{}", path, static_cast<long>(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return fmt::format("{} {}: cannot write there ({}); choose a writable path", flag, path, std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return std::nullopt;
}

std::optional<std::string> unwritable_folder(const std::string& flag, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    return fmt::format("{} {}: cannot create the folder ({}); choose a writable path", flag, dir,
                       ec ? ec.message() : "a file of that name is in the way");
  return unwritable_file(flag, (fs::path(dir) / ".mpscheck-write-test").string());
}

std::string destination_of(const Config& cfg, const Reporter& r) {
  const auto it = cfg.report_destinations.find(r.flag());
  return it != cfg.report_destinations.end() ? it->second : r.default_destination(cfg.report_dir);
}

std::optional<std::string> unwritable_outputs(const Config& cfg) {
  if (auto bad = unwritable_folder("--report-dir", cfg.report_dir)) return bad;
  if (!cfg.reference_cache.empty())
    if (auto bad = unwritable_folder("--reference-cache", cfg.reference_cache)) return bad;
  for (const Reporter* r : reporters()) {
    const std::string dest = destination_of(cfg, *r);
    if (dest.empty() || r->destination() == Destination::Console) continue;
    const bool given = cfg.report_destinations.count(r->flag()) > 0;
    const std::string label = given ? fmt::format("--{}", r->flag()) : fmt::format("the default --{}", r->flag());
    auto bad = r->destination() == Destination::Folder ? unwritable_folder(label, dest) : unwritable_file(label, dest);
    if (bad) return bad;
  }
  return std::nullopt;
}

Written write_reports(const Config& cfg, const ReportContext& ctx, bool merging) {
  Written result = Written::All;
  for (const Reporter* r : reporters()) {
    if (merging && !r->in_merge()) continue;
    const bool record = std::string(r->flag()) == "json";
    const std::string dest = destination_of(cfg, *r);
    if (dest.empty() && !r->runs_without_destination()) continue;
    try {
      r->write(ctx, dest);
    } catch (const ReportError& e) {
      std::cerr << "mpscheck: " << e.what();
      if (record) {
        if (!merging) std::cerr << "; the journal " << cfg.journal_path() << " still has every result";
        std::cerr << '\n';
        return Written::RecordFailed;
      }
      std::cerr << '\n';
      result = Written::SomeFailed;
    }
  }
  return result;
}

}  // namespace mpscheck::app
