#include "reports/console.hpp"
#include "reports/reporter.hpp"

#include "checks/memory.hpp"
#include "checks/recommend.hpp"
#include "reports/escape.hpp"
#include "reports/writers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <unistd.h>

namespace mpscheck {

bool use_color(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  return isatty(fd) && (no_color == nullptr || no_color[0] == '\0');
}

std::string ConsoleReporter::paint(const std::string& text, Status status) const {
  if (!options_.color) return text;
  const char* code = "";
  switch (status) {
    case Status::Pass: code = "\x1b[32m"; break;
    case Status::Skip: code = "\x1b[2m"; break;
    case Status::Unsupported:
    case Status::Fallback: code = "\x1b[33m"; break;
    default: code = "\x1b[31m"; break;
  }
  return std::string(code) + text + "\x1b[0m";
}

void ConsoleReporter::summary(const RunReport& report, const std::string& report_path) {
  const auto counts = count_by_status(report.cases);
  out_ << "\n"
       << (options_.color ? "\x1b[1m" : "") << "Summary" << (options_.color ? "\x1b[0m" : "") << " ("
       << report.cases.size() << " cases, target " << report.run.value("target", "?") << ")\n";
  for (const auto& [status, n] : counts)
    out_ << "  " << paint(fmt::format("{:<11}", to_string(status)), status) << ' ' << n << '\n';
  if (const std::string tier = tier_sentence(report.environment); !tier.empty()) out_ << "  " << tier << '\n';

  // Findings grouped by op (or model), the worst group first: one op's dtype, layout and direction
  // variants together.
  const std::vector<OpGroup> groups = findings_by_op(report);
  if (!groups.empty()) {
    out_ << "\nFindings by op\n";
    for (const auto& g : groups) {
      out_ << "  " << paint(fmt::format("{:<11}", to_string(g.worst)), g.worst) << ' ' << g.key
           << fmt::format(" ({} of {} case{})\n", g.findings.size(), g.cases, g.cases == 1 ? "" : "s");
      for (const auto* c : g.findings) {
        out_ << "    " << paint(fmt::format("{:<11}", to_string(c->status)), c->status) << ' ' << c->id
             << (c->tier.empty() ? "" : " [tier " + c->tier + "]") << '\n';
        if (!c->message.empty()) out_ << "                " << c->message << '\n';
      }
    }
  }

  std::vector<const CaseResult*> timed;
  for (const auto& c : report.cases)
    if (c.speedup > 0) timed.push_back(&c);
  if (!timed.empty()) {
    std::sort(timed.begin(), timed.end(), [](auto* a, auto* b) { return a->speedup > b->speedup; });
    int faster = 0, similar = 0, slower = 0;
    for (const auto* c : timed)
      (c->speed_class == SpeedClass::Faster ? faster : c->speed_class == SpeedClass::Slower ? slower : similar)++;
    out_ << fmt::format(
        "\nSpeed (target vs CPU float32 reference, median of interleaved runs): {} faster, {} similar, {} slower\n",
        faster, similar, slower);
    out_ << fmt::format("  {:>8}  {:<8} {:>10} {:>10}  {}\n", "speedup", "class", "reference", "target", "case");
    const size_t shown = std::min<size_t>(timed.size(), 20);
    auto row = [&](const CaseResult* c) {
      out_ << fmt::format("  {:>7.2f}x  {:<8} {:>10} {:>10}  {}\n", c->speedup, speed_text(*c),
                          format_seconds(c->reference_time->median_s), format_seconds(c->target_time->median_s), c->id);
    };
    if (timed.size() <= shown) {
      for (const auto* c : timed) row(c);
    } else {
      for (size_t i = 0; i < shown / 2; ++i) row(timed[i]);
      out_ << fmt::format("  ... {} more ...\n", timed.size() - shown);
      for (size_t i = timed.size() - shown / 2; i < timed.size(); ++i) row(timed[i]);
    }
  }
  // Memory: the largest peak on the target, and how many cases need more than the device recommends.
  const CaseResult* largest = nullptr;
  int over = 0;
  for (const auto& c : report.cases) {
    if (!c.memory || c.memory->peak_allocated < 0) continue;
    if (!largest || c.memory->peak_allocated > largest->memory->peak_allocated) largest = &c;
    if (c.status == Status::Memory) ++over;
  }
  if (largest)
    out_ << fmt::format("\nMemory on the target: largest peak {} ({}){}; {} case{} over it or out of memory\n",
                        bytes_text(largest->memory->peak_allocated), largest->id,
                        largest->memory->recommended_max > 0
                            ? ", the device recommends at most " + bytes_text(largest->memory->recommended_max)
                            : std::string(", no recommended maximum known"),
                        over, over == 1 ? "" : "s");
  const auto classes = summarize_classes(report.cases);
  if (!classes.empty()) {
    out_ << "\nRecommendation by workload class (accelerate / keep on CPU / blocked / reduce memory cases)\n";
    for (const auto& [name, s] : classes)
      out_ << fmt::format("  {:<32} {:<13} {:>4} {:>4} {:>4} {:>4}\n", name, s.recommendation(), s.accelerate,
                          s.keep_on_cpu, s.blocked, s.reduce_memory);
  }
  out_ << "\nReport: " << report_path << '\n';
  out_.flush();
}

// The summary on standard output when the run ends (the live lines come from ConsoleReporter's
// case_started/case_finished during the run). `merge` prints its own one line instead.
const Reporter& console_reporter() {
  static const Reporter reporter({.flag = "",
                                  .help = "totals, findings, speed and recommendations on standard output",
                                  .destination = Destination::Console,
                                  .runs_without_destination = [] { return true; },
                                  .in_merge = false},
                                 [](const ReportContext& ctx, const std::string&) {
                                   ConsoleReporter(ctx.console, false, ctx.color).summary(ctx.report, ctx.json_path);
                                 });
  return reporter;
}

}  // namespace mpscheck
