// The lines a run prints while it goes (reports/console.hpp): the progress line on a terminal, a
// line per case or per finding. The summary at the run's end is in console.cpp.
#include "reports/console.hpp"

#include "reports/escape.hpp"
#include "reports/writers.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <sys/ioctl.h>

namespace mpscheck {

namespace {

// To the line's start, and (after the text) clear what an older, longer line left: written over in
// one go, the line never shows blank between two draws.
constexpr const char* kLineStart = "\r";
constexpr const char* kClearToEnd = "\x1b[K";

}  // namespace

std::size_t terminal_columns(int fd) {
  winsize size{};
  if (ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 100;
}

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

ConsoleReporter::ConsoleReporter(std::ostream& out, ConsoleOptions options) : out_(out), options_(std::move(options)) {
  if (!options_.now)
    options_.now = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  if (options_.columns < 20) options_.columns = 20;
}

double ConsoleReporter::seconds() const { return options_.now() - started_at_; }

void ConsoleReporter::run_started(const RunStart& start) {
  started_at_ = options_.now();
  first_position_ = start.resumed;
  finished_ = start.resumed;
  total_ = start.planned;
}

void ConsoleReporter::case_started(std::size_t index, std::size_t total, const std::string& id) {
  total_ = total;
  running_ = id;
  draw_progress();
}

void ConsoleReporter::case_finished(std::size_t index, std::size_t total, const CaseResult& r) {
  total_ = total;
  finished_ = index + 1;
  const bool finding = is_finding(r.status);
  if (finding) ++findings_;
  if (!options_.tty || options_.verbose || finding) {
    end_progress();
    print_case(index, total, r);
  }
  draw_progress();
}

void ConsoleReporter::print_case(std::size_t index, std::size_t total, const CaseResult& r) {
  const int width = static_cast<int>(std::to_string(total).size());
  std::string speed;
  if (r.speedup > 0) speed = fmt::format("  {}x {}", format_speedup(r.speedup), speed_text(r));
  out_ << fmt::format("[{:>{}}/{}] ", index + 1, width, total)
       << paint(fmt::format("{:<11}", to_string(r.status)), r.status) << ' ' << r.id << speed << '\n';
  if (is_finding(r.status) && !r.message.empty()) out_ << "      " << r.message << '\n';
  out_.flush();
}

// "[1234/4701] 38.5 cases/s, 1m30s left, 3 findings | op/...": what fits in the terminal's width.
std::string ConsoleReporter::progress_text() const {
  const double elapsed = seconds();
  const std::size_t done = finished_ - first_position_;
  std::string rate = "-- cases/s", left = "? left";
  if (done > 0 && elapsed > 0) {
    const double per_second = done / elapsed;
    rate = fmt::format("{:.1f} cases/s", per_second);
    left = duration_text((total_ - finished_) / per_second) + " left";
  }
  std::string line =
      fmt::format("[{}/{}] {}, {}, {} finding{}", finished_, total_, rate, left, findings_, findings_ == 1 ? "" : "s");
  if (!running_.empty() && finished_ < total_) line += " | " + running_;
  if (line.size() > options_.columns - 1) line = line.substr(0, options_.columns - 4) + "...";
  return line;
}

// Twice a case (it starts, it ends), some 40 times a second in a quick run: a hundred bytes each.
void ConsoleReporter::draw_progress() {
  if (!options_.tty) return;
  out_ << kLineStart << progress_text() << kClearToEnd << std::flush;
  line_open_ = true;
}

void ConsoleReporter::end_progress() {
  if (!line_open_) return;
  out_ << kLineStart << kClearToEnd << std::flush;
  line_open_ = false;
}

void ConsoleReporter::run_ended(const ReportContext&) {
  if (!options_.tty) return;
  end_progress();
  const std::size_t done = finished_ - first_position_;
  const double elapsed = seconds();
  out_ << fmt::format("{} of {} cases in {}{}, {} finding{}\n", finished_, total_, duration_text(elapsed),
                      done > 0 && elapsed > 0 ? fmt::format(" ({:.1f} cases/s)", done / elapsed) : std::string(),
                      findings_, findings_ == 1 ? "" : "s");
  out_.flush();
}

}  // namespace mpscheck
