// A run's events (reports/run_listener.hpp): the order RunListeners passes them on in, what the
// run loop sends on a fake runner (no worker, no device), a listener that stops the run, and the
// journal, the console and the report files as listeners.
#include "core/journal.hpp"
#include "core/report_outputs.hpp"
#include "core/run_loop.hpp"
#include "reports/console.hpp"
#include "reports/run_listener.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <memory>
#include <sstream>
#include <sys/resource.h>

using namespace mpscheck;
namespace fs = std::filesystem;

namespace {

// Writes each event it hears into a log shared with other listeners, so their order shows.
class Recorder final : public RunListener {
 public:
  Recorder(std::string name, std::vector<std::string>& log) : name_(std::move(name)), log_(log) {}
  void run_started(const RunStart& s) override {
    log_.push_back(line("run_started " + s.target + " " + std::to_string(s.planned) + " " + std::to_string(s.resumed)));
  }
  void case_started(size_t position, size_t total, const std::string& id) override {
    log_.push_back(line("case_started " + std::to_string(position) + "/" + std::to_string(total) + " " + id));
  }
  void case_finished(size_t position, size_t total, const CaseResult& r) override {
    log_.push_back(line("case_finished " + std::to_string(position) + "/" + std::to_string(total) + " " + r.id + " " +
                        to_string(r.status)));
  }
  void run_ended(const ReportContext& report) override {
    log_.push_back(line("run_ended " + std::to_string(report.report.cases.size())));
  }

 private:
  std::string line(const std::string& what) const { return name_ + ": " + what; }
  std::string name_;
  std::vector<std::string>& log_;
};

// Stops the run on its `stop_at`th case_finished (from 1), as the journal does when it cannot write.
class Stopper final : public RunListener {
 public:
  explicit Stopper(int stop_at) : stop_at_(stop_at) {}
  void case_finished(size_t, size_t, const CaseResult&) override {
    if (++heard_ == stop_at_) throw RunStopped("cannot keep this case");
  }

 private:
  int stop_at_, heard_ = 0;
};

// A case that never runs here: the fake runner answers for it.
class NamedCase final : public Workload {
 public:
  explicit NamedCase(std::string id) : id_(std::move(id)) {}
  std::string id() const override { return id_; }
  Kind kind() const override { return Kind::Op; }
  std::unique_ptr<Instance> instantiate(const Setup&, const Placement&) const override { return nullptr; }

 private:
  std::string id_;
};

// Starts no process: every case it is asked for passes, except the ids in `mismatch`.
class FakeRunner final : public Runner {
 public:
  FakeRunner() : Runner(WorkerConfig{}, "/dev/null") {}
  CaseResult run(const std::string& id, double, bool) override {
    asked.push_back(id);
    CaseResult r;
    r.id = id;
    r.status = id.find("bad") != std::string::npos ? Status::Mismatch : Status::Pass;
    return r;
  }
  void stop() override {}
  std::vector<std::string> asked;
};

// Three cases on cpu, one timed worker (--jobs 1): the plan's order is the order they run in.
struct LoopFixture {
  std::vector<std::unique_ptr<NamedCase>> cases;
  std::vector<PlannedCase> plan;
  RunLoopOptions options;
  FakeRunner runner;

  explicit LoopFixture(const std::vector<std::string>& ids) {
    for (const auto& id : ids) {
      cases.push_back(std::make_unique<NamedCase>(id));
      plan.push_back({RegisteredWorkload{cases.back().get(), nullptr}, false});
    }
    options.jobs = 1;
    options.target = parse_target("cpu");
    options.journal_path = "j.jsonl";
  }
};

CaseResult passed(const std::string& id) {
  CaseResult r;
  r.id = id;
  r.kind = CaseKind::Op;
  r.status = Status::Pass;
  return r;
}

}  // namespace

TEST(RunListeners, SendsEachEventToEveryListenerInTheOrderTheyWereAdded) {
  std::vector<std::string> log;
  Recorder first("first", log), second("second", log);
  RunListeners listeners;
  listeners.add(first);
  listeners.add(second);
  listeners.run_started({"cpu", 2, 0});
  listeners.case_started(0, 2, "op/a");
  listeners.case_finished(0, 2, passed("op/a"));
  RunReport report;
  report.cases = {passed("op/a")};
  std::ostringstream out;
  listeners.run_ended(ReportContext{report, "r.json", nullptr, nullptr, out, false, {}});
  EXPECT_EQ(log, (std::vector<std::string>{"first: run_started cpu 2 0", "second: run_started cpu 2 0",
                                           "first: case_started 0/2 op/a", "second: case_started 0/2 op/a",
                                           "first: case_finished 0/2 op/a pass", "second: case_finished 0/2 op/a pass",
                                           "first: run_ended 1", "second: run_ended 1"}));
}

TEST(RunListeners, AListenerThatStopsTheRunLeavesTheLaterOnesUnsent) {
  std::vector<std::string> log;
  Stopper stopper(1);
  Recorder after("after", log);
  RunListeners listeners;
  listeners.add(stopper);
  listeners.add(after);
  EXPECT_THROW(listeners.case_finished(0, 1, passed("op/a")), RunStopped);
  EXPECT_TRUE(log.empty()) << log.front();
}

TEST(RunLoop, ListenersHearTheStartAndEachCaseInOrderResumedOnesCounted) {
  LoopFixture f({"op/a", "op/bad", "op/c"});
  const std::map<std::string, CaseResult> done{{"op/a", passed("op/a")}};
  std::vector<std::string> log;
  Recorder recorder("r", log);
  RunListeners listeners;
  listeners.add(recorder);
  const RunOutcome out = execute_plan(f.plan, done, f.options, f.runner, listeners);
  EXPECT_EQ(log, (std::vector<std::string>{"r: run_started cpu 3 1", "r: case_started 1/3 op/bad",
                                           "r: case_finished 1/3 op/bad mismatch", "r: case_started 2/3 op/c",
                                           "r: case_finished 2/3 op/c pass"}));
  EXPECT_EQ(f.runner.asked, (std::vector<std::string>{"op/bad", "op/c"}));  // the resumed case does not run again
  ASSERT_EQ(out.cases.size(), 3u);
  EXPECT_EQ(out.cases[0].id, "op/a");
  EXPECT_EQ(out.cases[1].id, "op/bad");
  EXPECT_EQ(out.cases[1].target, "cpu");  // identified before any listener hears of it
  EXPECT_FALSE(out.stopped.has_value());
}

TEST(RunLoop, AListenerThatStopsTheRunKeepsEveryCaseBeforeItAndRunsNoMore) {
  LoopFixture f({"op/a", "op/b", "op/c", "op/d"});
  std::vector<std::string> log;
  Stopper journal_like(2);  // first, as the journal is: the case it cannot keep reaches no one after it
  Recorder console_like("c", log);
  RunListeners listeners;
  listeners.add(journal_like);
  listeners.add(console_like);
  const RunOutcome out = execute_plan(f.plan, {}, f.options, f.runner, listeners);
  ASSERT_TRUE(out.stopped.has_value());
  EXPECT_EQ(*out.stopped, "cannot keep this case");
  ASSERT_EQ(out.cases.size(), 1u);
  EXPECT_EQ(out.cases[0].id, "op/a");
  EXPECT_EQ(f.runner.asked, (std::vector<std::string>{"op/a", "op/b"}));
  EXPECT_EQ(log, (std::vector<std::string>{"c: run_started cpu 4 0", "c: case_started 0/4 op/a",
                                           "c: case_finished 0/4 op/a pass", "c: case_started 1/4 op/b"}));
}

TEST(RunLoop, AListenerThatStopsTheRunAtItsStartRunsNothing) {
  class StopsAtStart final : public RunListener {
    void run_started(const RunStart&) override { throw RunStopped("not now"); }
  } stops;
  LoopFixture f({"op/a"});
  const RunOutcome out = execute_plan(f.plan, {}, f.options, f.runner, stops);
  EXPECT_EQ(out.stopped.value_or(""), "not now");
  EXPECT_TRUE(out.cases.empty());
  EXPECT_TRUE(f.runner.asked.empty());
}

// A journal that cannot write (here a file-size limit, as a full disk would) stops the run with its
// one line, and what it wrote before stays readable.
TEST(RunLoop, AJournalThatCannotWriteStopsTheRunWithItsOneLine) {
  const std::string path = (fs::temp_directory_path() / "mpscheck-listener-journal.jsonl").string();
  LoopFixture f({"op/a", "op/b", "op/c"});
  Journal journal(path, {{"mpscheck_journal", 1}}, false);
  std::vector<std::string> log;
  Recorder console_like("c", log);
  // Lets op/a's line in and no more (ordinary lines are ~1 kB).
  class LimitAfterFirst final : public RunListener {
   public:
    explicit LimitAfterFirst(const std::string& p) : path_(p) {}
    void case_finished(size_t position, size_t, const CaseResult&) override {
      if (position != 0) return;
      rlimit lim{};
      getrlimit(RLIMIT_FSIZE, &lim);
      saved = lim;
      lim.rlim_cur = fs::file_size(path_);
      setrlimit(RLIMIT_FSIZE, &lim);
    }
    rlimit saved{};

   private:
    std::string path_;
  } limit(path);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of a signal, as the run sets it
  RunListeners listeners;
  listeners.add(journal);
  listeners.add(console_like);
  listeners.add(limit);
  const RunOutcome out = execute_plan(f.plan, {}, f.options, f.runner, listeners);
  setrlimit(RLIMIT_FSIZE, &limit.saved);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_TRUE(out.stopped.has_value());
  EXPECT_NE(out.stopped->find("cannot write the journal " + path), std::string::npos) << *out.stopped;
  EXPECT_NE(out.stopped->find("the 1 cases finished before it are kept there"), std::string::npos) << *out.stopped;
  EXPECT_NE(out.stopped->find("--resume"), std::string::npos) << *out.stopped;
  ASSERT_EQ(out.cases.size(), 1u);
  EXPECT_EQ(log.back(), "c: case_started 1/3 op/b");  // op/b was never printed
  const auto kept = read_journal(path);
  ASSERT_EQ(kept.results.size(), 1u);
  EXPECT_EQ(kept.results[0].id, "op/a");
  EXPECT_EQ(kept.damaged_lines, 0);
  fs::remove(path);
}

TEST(ConsoleReporter, PrintsTheSameLineAsAListenerAsCalledByName) {
  std::ostringstream direct, heard;
  ConsoleReporter(direct, false, false).case_finished(1, 12, passed("op/a"));
  ConsoleReporter console(heard, false, false);
  RunListeners listeners;
  listeners.add(console);
  listeners.case_started(1, 12, "op/a");  // no progress line off a terminal
  listeners.case_finished(1, 12, passed("op/a"));
  EXPECT_EQ(heard.str(), direct.str());
  EXPECT_EQ(heard.str(), "[ 2/12] pass        op/a\n");
}

TEST(ReportFiles, WritesEveryReportAskedForWhenTheRunEnds) {
  const fs::path dir = fs::temp_directory_path() / "mpscheck-listener-reports";
  fs::remove_all(dir);
  Config cfg;
  cfg.report_dir = dir.string();
  cfg.report_destinations["csv"] = (dir / "r.csv").string();
  app::ReportFiles files(cfg);
  RunReport report;
  report.environment = nlohmann::json::object();
  report.run = {{"target", "cpu"}};
  report.cases = {passed("op/a")};
  std::ostringstream out;
  files.case_finished(0, 1, report.cases[0]);  // hears only the end
  EXPECT_FALSE(fs::exists(dir / "r.csv"));
  files.run_ended(ReportContext{report, cfg.report_path(), nullptr, nullptr, out, false, {}});
  EXPECT_EQ(files.written(), app::Written::All);
  EXPECT_TRUE(fs::exists(dir / "report.json"));
  EXPECT_TRUE(fs::exists(dir / "r.csv"));
  EXPECT_NE(out.str().find("Summary (1 cases, target cpu)"), std::string::npos) << out.str();
  fs::remove_all(dir);
}
