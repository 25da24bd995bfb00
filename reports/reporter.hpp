// A report format. Each format is one class in its own file under reports/, plus one line in
// reports/reporters.cpp. The command line (its flag), the check that every destination is
// writable before the first case, the end of a run and `merge` all go through that one list.
#pragma once

#include "reports/report.hpp"

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace mpscheck {

class Workload;
struct ReproTarget;

// What a reporter is given once the results are in.
struct ReportContext {
  const RunReport& report;
  std::string json_path;               // where the JSON report is (the console names it)
  const ReproTarget* repro = nullptr;  // device, dtype, seed and size for reproducers; null in merge
  // The loaded case of an id, or null; always null in `merge`, which loads no plugins.
  std::function<const Workload*(const std::string& id)> workload;
  std::ostream& console;
  bool color = false;
};

enum class Destination {
  Console,  // standard output: no flag
  File,     // --FLAG FILE
  Folder,   // --FLAG DIR
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  // The command-line flag without dashes ("junit" is --junit FILE); empty for the console.
  virtual const char* flag() const = 0;
  // One line for --help.
  virtual const char* help() const = 0;
  virtual Destination destination() const { return Destination::File; }
  // Where the report goes when its flag is absent; empty: it is not written. The JSON report
  // always is, into the report folder.
  virtual std::string default_destination(const std::string& report_dir) const { return {}; }
  // Runs even without a destination (the console; Markdown under GitHub Actions).
  virtual bool runs_without_destination() const { return false; }
  // Whether `merge`, which has results but no loaded cases, offers it.
  virtual bool in_merge() const { return true; }
  // Writes the report to `destination` (empty when runs_without_destination allowed it).
  // Throws ReportError naming the path on failure.
  virtual void write(const ReportContext& context, const std::string& destination) const = 0;
};

// The common shape: a report rendered from the results alone into one text file (CSV, JUnit,
// HTML). Such a format is its render function plus this, constructed with its flag and help line.
class RenderedFileReporter final : public Reporter {
 public:
  using Render = std::string (*)(const RunReport&);
  RenderedFileReporter(const char* flag, const char* help, Render render) : flag_(flag), help_(help), render_(render) {}
  const char* flag() const override { return flag_; }
  const char* help() const override { return help_; }
  void write(const ReportContext& context, const std::string& destination) const override;

 private:
  const char* flag_;
  const char* help_;
  Render render_;
};

// Every format, in the order a run writes them: the JSON report first (the record), the console
// summary last (what a user reads when the run ends).
const std::vector<const Reporter*>& reporters();

}  // namespace mpscheck
