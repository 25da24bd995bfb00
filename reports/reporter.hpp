// A report format. Each format is one file under reports/ that builds its Reporter, plus one line
// in reports/reporters.cpp. The command line (its flag), the check that every destination is
// writable before the first case, the end of a run and `merge` all go through that one list.
#pragma once

#include "reports/report.hpp"

#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace mpscheck {

class Workload;
struct ReproTarget;

// A model finding's op-level reproducer (core/layer_repro.hpp): the script and where it and the
// layer's saved tensors were written, or why there is none.
struct LayerScript {
  std::string script;  // the Python text; empty when there is none
  std::string script_path, data_path;
  std::string missing;  // why there is none
};

// What a reporter is given once the results are in.
struct ReportContext {
  const RunReport& report;
  std::string json_path;               // where the JSON report is (the console names it)
  const ReproTarget* repro = nullptr;  // device, dtype, seed and size for reproducers; null in merge
  // The loaded case of an id, or null; always null in `merge`, which loads no plugins.
  std::function<const Workload*(const std::string& id)> workload;
  std::ostream& console;
  bool color = false;
  // Writes a localised model finding's op-level reproducer into a folder (bug reports); null in
  // `merge`, which loads no cases.
  std::function<LayerScript(const CaseResult& finding, const std::string& dir)> layer_script{};
};

enum class Destination {
  Console,  // standard output: no flag
  File,     // --FLAG FILE
  Folder,   // --FLAG DIR
};

// A report format: what the command line, the writability check and the end of a run need to
// know about it, and how it writes. A format is one of these, built in its own file under
// reports/ by `const Reporter& NAME_reporter()`, plus its line in reports/reporters.cpp; no
// format derives a class of its own.
class Reporter final {
 public:
  struct Traits {
    const char* flag;  // the command-line flag without dashes ("junit" is --junit FILE); empty for the console
    const char* help;  // one line for --help
    Destination destination = Destination::File;
    // A file name in the report folder written when the flag is absent (the JSON record); null:
    // without its flag the format is not written.
    const char* default_file = nullptr;
    // Asked when the run ends: whether it writes even without a destination (the console; the
    // Markdown summary under GitHub Actions). Null: never.
    bool (*runs_without_destination)() = nullptr;
    bool in_merge = true;  // whether `merge`, which has results but no loaded cases, offers it
  };
  // Writes the report to `destination` (empty when runs_without_destination allowed it). Throws
  // ReportError naming the path on failure.
  using Write = std::function<void(const ReportContext& context, const std::string& destination)>;
  // The common case: a text rendered from the results alone.
  using Render = std::string (*)(const RunReport& report);

  Reporter(Traits traits, Write write) : traits_(traits), write_(std::move(write)) {}
  // A file format rendered from the results alone (CSV, JUnit, HTML, JSON): `render`'s text goes
  // to the destination through the one atomic writer, write_text_report.
  Reporter(Traits traits, Render render);

  const char* flag() const { return traits_.flag; }
  const char* help() const { return traits_.help; }
  Destination destination() const { return traits_.destination; }
  bool in_merge() const { return traits_.in_merge; }
  // Where the report goes when its flag is absent: REPORT-DIR/default_file, or empty.
  std::string default_destination(const std::string& report_dir) const;
  bool runs_without_destination() const {
    return traits_.runs_without_destination && traits_.runs_without_destination();
  }
  void write(const ReportContext& context, const std::string& destination) const { write_(context, destination); }

 private:
  Traits traits_;
  Write write_;
};

// Every format, in the order a run writes them: the JSON report first (the record), the console
// summary last (what a user reads when the run ends).
const std::vector<const Reporter*>& reporters();

}  // namespace mpscheck
