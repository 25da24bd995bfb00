#pragma once
// Where a run's or a merge's reports go: every destination checked writable before the first case,
// then every report asked for written, the JSON record first (reports/reporters.cpp's order).
#include "core/config.hpp"
#include "reports/reporter.hpp"
#include "reports/run_listener.hpp"

#include <optional>
#include <string>

namespace mpscheck::app {

// Fails before any case runs rather than after the last: `flag` FILE can be created and replaced
// the way the report writers do it (parent folders made, a temporary file, then a rename).
std::optional<std::string> unwritable_file(const std::string& flag, const std::string& path);
// The same for a folder a flag names (made if missing).
std::optional<std::string> unwritable_folder(const std::string& flag, const std::string& dir);
// Where a reporter writes in this run: its flag's value, else its default; empty: not asked for.
std::string destination_of(const Config& cfg, const Reporter& r);
// Every destination of the run, checked before the first case.
std::optional<std::string> unwritable_outputs(const Config& cfg);

// Writes the reports a run or a merge was asked for, in the order of reports/reporters.cpp: the
// JSON record first. If the record cannot be written nothing else is tried and the caller says
// where the results still are; a later report that fails is named and the others still written.
enum class Written { All, RecordFailed, SomeFailed };
Written write_reports(const Config& cfg, const ReportContext& ctx, bool merging);

// A run's listener for its reports: when the run ends, every report asked for, as write_reports
// writes them (the console summary last).
class ReportFiles final : public RunListener {
 public:
  explicit ReportFiles(const Config& cfg) : cfg_(cfg) {}
  void run_ended(const ReportContext& report) override { written_ = write_reports(cfg_, report, /*merging=*/false); }
  // What run_ended wrote; All until it is sent.
  Written written() const { return written_; }

 private:
  const Config& cfg_;
  Written written_ = Written::All;
};

}  // namespace mpscheck::app
