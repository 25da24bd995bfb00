// Chaos: the host killed at random points, its journal's disk full, a plugin with 20,000 cases.
// Run by their own ctest entry (`chaos`): they take minutes, not seconds.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace mpscheck::testing;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Starts mpscheck directly (no shell in between, so the pid is the host's), output into `log`.
pid_t spawn_mpscheck(const std::vector<std::string>& args, const std::string& cwd, const std::vector<std::string>& env,
                     const std::string& log) {
  std::vector<std::string> argv_s{binary()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s{"NO_COLOR=1"};
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  for (auto& e : env_s) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(cwd.c_str()) != 0) _exit(126);
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

int wait_exit_code(pid_t pid) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// The journal has its header line: a run can be resumed from it.
bool resumable(const std::string& journal) {
  std::ifstream in(journal);
  std::string first;
  return std::getline(in, first) && first.find("\"mpscheck_journal\"") != std::string::npos;
}

std::map<std::string, std::string> statuses(const std::string& report) {
  std::map<std::string, std::string> out;
  for (const auto& [id, c] : cases_by_id(read_json_file(report))) out[id] = c["status"].get<std::string>();
  return out;
}

long peak_rss_kb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// Runs to the end, sampling the host's own high-water RSS (not its workers').
std::pair<int, long> run_measuring_memory(const std::vector<std::string>& args, const std::string& cwd,
                                          const std::vector<std::string>& env) {
  const pid_t pid = spawn_mpscheck(args, cwd, env, cwd + "/host.log");
  long peak = 0;
  int st = 0;
  for (;;) {
    peak = std::max(peak, peak_rss_kb(pid));
    const pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), peak};
}

std::vector<std::string> tiny_args() {
  return {"--no-default-plugins",
          "--plugin-dir",
          fixtures_dir() + "/fixture_hardening",
          "--filter",
          "^op/hardening/tiny/",
          "--target",
          "cpu",
          "--quick",
          "--min-time",
          "0"};
}

}  // namespace

TEST(Chaos, SigkillAtFiveRandomPointsThenResumeGivesTheUninterruptedResult) {
  const std::vector<std::string> args = {
      "--plugin-dir", test_plugins_dir(),
      "--filter",     "^op/faults/|^op/activation/gelu/|^op/shape/cat/f32/contiguous",
      "--target",     "cpu",
      "--quick",      "--timeout",
      "10",           "--min-time",
      "0.01"};
  const std::string clean = fresh_dir("chaos-clean");
  const auto t0 = Clock::now();
  const int clean_exit = wait_exit_code(spawn_mpscheck(args, clean, {}, clean + "/host.log"));
  const double length_s = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_EQ(clean_exit, 1) << read_text_file(clean + "/host.log");
  const auto expected = statuses(clean + "/mpscheck-report/report.json");
  ASSERT_GT(expected.size(), 15u);

  const std::string dir = fresh_dir("chaos-killed");
  const std::string journal = dir + "/mpscheck-report/journal.jsonl";
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> when(0.3, std::max(0.5, 0.9 * length_s));
  std::ostringstream trace;
  trace << "seed " << seed << ", uninterrupted run " << length_s << " s; kills at";
  int killed_running = 0;
  for (int k = 0; k < 5; ++k) {
    std::vector<std::string> a = args;
    if (resumable(journal)) a.push_back("--resume");
    const pid_t pid = spawn_mpscheck(a, dir, {}, dir + "/host.log");
    const double at = when(rng);
    trace << ' ' << at;
    std::this_thread::sleep_for(std::chrono::duration<double>(at));
    if (waitpid(pid, nullptr, WNOHANG) == 0) ++killed_running;
    kill(pid, SIGKILL);
    wait_exit_code(pid);
  }
  SCOPED_TRACE(trace.str());
  EXPECT_GE(killed_running, 1);
  std::vector<std::string> a = args;
  if (resumable(journal)) a.push_back("--resume");
  const int final_exit = wait_exit_code(spawn_mpscheck(a, dir, {}, dir + "/host.log"));
  EXPECT_EQ(final_exit, 1) << read_text_file(dir + "/host.log");
  EXPECT_EQ(statuses(dir + "/mpscheck-report/report.json"), expected);
  // No case recorded twice: each whole journal line names a case once.
  std::map<std::string, int> lines;
  std::ifstream in(journal);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("id") && j.contains("status")) ++lines[j["id"].get<std::string>()];
  }
  for (const auto& [id, n] : lines) EXPECT_EQ(n, 1) << id;
}

TEST(Chaos, JournalWritesFailingStopTheRunCleanlyAndResumeCompletesOnceThereIsRoom) {
  const std::string dir = fresh_dir("chaos-full-disk");
  const std::vector<std::string> env = {"MPSCHECK_FIXTURE_TINY_CASES=40"};
  std::string cmd = "ulimit -f 16; exec env NO_COLOR=1 MPSCHECK_FIXTURE_TINY_CASES=40 " + quote(binary());
  for (const auto& a : tiny_args()) cmd += " " + quote(a);
  // A file-size limit (8-16 KiB, as the shell counts blocks) makes the journal's writes fail part way.
  const auto full = run_shell(cmd, dir);
  EXPECT_EQ(full.exit_code, 4) << full.err;
  EXPECT_NE(full.err.find("cannot write the journal"), std::string::npos) << full.err;
  EXPECT_NE(full.err.find("File too large"), std::string::npos) << full.err;
  EXPECT_NE(full.err.find("--resume"), std::string::npos) << full.err;
  // Every line on disk is whole: header plus some cases, none torn.
  const std::string journal = dir + "/mpscheck-report/journal.jsonl";
  std::ifstream in(journal);
  int cases = 0, lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "line " << lines + 1 << " is damaged: " << line;
    cases += j.contains("id") ? 1 : 0;
  }
  EXPECT_GT(cases, 0);
  EXPECT_LT(cases, 40);
  EXPECT_NE(full.err.find("the " + std::to_string(cases) + " cases finished before it are kept"), std::string::npos)
      << full.err;

  std::vector<std::string> args = tiny_args();
  args.push_back("--resume");
  const auto resumed = run_mpscheck(args, dir, env);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming: " + std::to_string(cases) + " cases already in the journal"), std::string::npos)
      << resumed.err;
  EXPECT_EQ(statuses(dir + "/mpscheck-report/report.json").size(), 40u);
}

TEST(Chaos, TwentyThousandTinyCasesKeepHostMemoryBoundedAndEveryReportWriterFinishes) {
  std::vector<std::string> args = tiny_args();
  args.insert(args.end(), {"--json", "r.json", "--junit", "r.xml", "--markdown", "r.md", "--html", "r.html",
                           "--bug-reports", "bugs"});
  const std::string small = fresh_dir("chaos-200-cases");
  const auto [small_exit, small_peak] = run_measuring_memory(args, small, {"MPSCHECK_FIXTURE_TINY_CASES=200"});
  ASSERT_EQ(small_exit, 0) << read_text_file(small + "/host.log");
  const std::string big = fresh_dir("chaos-20000-cases");
  const auto t0 = Clock::now();
  const auto [big_exit, big_peak] = run_measuring_memory(args, big, {"MPSCHECK_FIXTURE_TINY_CASES=20000"});
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_EQ(big_exit, 0) << read_text_file(big + "/host.log").substr(0, 2000);
  std::cout << "host peak RSS: " << small_peak / 1024 << " MiB for 200 cases, " << big_peak / 1024
            << " MiB for 20,000 cases (" << seconds << " s)\n";
  // Bounded: what 19,800 more cases cost the host stays under 12 KiB each (results, reports).
  EXPECT_LT(big_peak - small_peak, 19800 * 12) << small_peak << " KiB vs " << big_peak << " KiB";
  EXPECT_EQ(read_json_file(big + "/r.json")["cases"].size(), 20000u);
  EXPECT_NE(read_text_file(big + "/r.html").find("op/hardening/tiny/19999"), std::string::npos);
  const std::string junit = read_text_file(big + "/r.xml");
  size_t testcases = 0;
  for (size_t p = junit.find("<testcase "); p != std::string::npos; p = junit.find("<testcase ", p + 1)) ++testcases;
  EXPECT_EQ(testcases, 20000u);
  EXPECT_NE(junit.find("<testcase name=\"tiny/19999\""), std::string::npos);
  EXPECT_NE(read_text_file(big + "/r.md").find("**20000 cases, 0 findings.**"), std::string::npos);
}
