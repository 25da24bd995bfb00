// The host against workers that misbehave and users who hand it bad input: descriptors, pipes,
// start-up failures, fresh workers, shards, and a table of bad input with its exit codes.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace mpscheck::testing;
namespace fs = std::filesystem;

namespace {

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string hardening_plugins() { return fixtures_dir() + "/fixture_hardening"; }

// Runs mpscheck through the shell with `prefix` before it (descriptors, limits, timeouts).
CommandResult run_with_prefix(const std::string& prefix, const std::vector<std::string>& args, const std::string& cwd,
                              const std::vector<std::string>& env = {}) {
  std::string cmd = prefix + " env NO_COLOR=1";
  for (const auto& e : env) cmd += " " + quote(e);
  cmd += " " + quote(binary());
  for (const auto& a : args) cmd += " " + quote(a);
  return run_shell(cmd, cwd);
}

std::vector<std::string> hardening_args(const std::string& filter) {
  return {"--no-default-plugins",
          "--plugin-dir",
          hardening_plugins(),
          "--filter",
          filter,
          "--target",
          "cpu",
          "--quick",
          "--min-time",
          "0"};
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(Hardening, AWorkerInheritsOnlyItsOwnDescriptors) {
  const std::string dir = fresh_dir("hardening-fds");
  // Descriptors 7 and 9 are open in the host without close-on-exec, as a CI runner's might be.
  const auto r = run_with_prefix("exec 7</dev/null 9>extra.txt;", hardening_args("^op/hardening/fds$"), dir);
  ASSERT_EQ(r.exit_code, 1) << r.err;  // the case reports its descriptors as an error
  const auto c = cases_by_id(read_json_file(dir + "/mpscheck-report/report.json")).at("op/hardening/fds");
  // stdin, the log as stdout and stderr, the result pipe: nothing of the host's (journal, log, 7, 9).
  EXPECT_EQ(c["message"].get<std::string>().find("worker descriptors: 0,1,2,3"), 0u) << c["message"];
  EXPECT_EQ(c["message"].get<std::string>(), "worker descriptors: 0,1,2,3") << c["message"];
}

TEST(Hardening, AWorkerThatClosesItsResultPipeIsKilledNotWaitedForForever) {
  const std::string dir = fresh_dir("hardening-close-pipe");
  // The case hangs after closing its pipe; `timeout` turns the old endless waitpid into exit 124.
  std::vector<std::string> args = hardening_args("^op/hardening/(close_result_pipe|fds)$");
  args.insert(args.end(), {"--timeout", "100"});
  const auto r = run_with_prefix("timeout 60", args, dir);
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const auto cases = cases_by_id(read_json_file(dir + "/mpscheck-report/report.json"));
  const auto& c = cases.at("op/hardening/close_result_pipe");
  EXPECT_EQ(c["status"], "crash");
  EXPECT_NE(c["message"].get<std::string>().find("closed its result pipe and was killed"), std::string::npos)
      << c["message"];
  // The next case ran in a fresh worker.
  EXPECT_EQ(cases.at("op/hardening/fds")["status"], "error");
}

TEST(Hardening, AWorkerThatCannotStartStopsTheRunAtOnceWithOneLine) {
  const std::string dir = fresh_dir("hardening-no-start");
  const auto r = run_mpscheck(hardening_args("^op/hardening/"), dir, {"MPSCHECK_FIXTURE_ABORT_IN_WORKER=1"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  const std::string last = r.err.substr(r.err.rfind("mpscheck: "));
  EXPECT_EQ(count_lines(last), 1) << r.err;
  EXPECT_NE(last.find("the worker could not start (SIGABRT"), std::string::npos) << r.err;
  EXPECT_NE(last.find("fixture: aborting while the worker loads plugins"), std::string::npos) << r.err;
  EXPECT_NE(last.find("--resume"), std::string::npos) << r.err;
  // No case was blamed: the journal holds its header alone, and no report claims a crash.
  EXPECT_EQ(count_lines(read_text_file(dir + "/mpscheck-report/journal.jsonl")), 1);
  EXPECT_FALSE(fs::exists(dir + "/mpscheck-report/report.json"));
}

TEST(Hardening, AFreshWorkerFollowsATargetErrorWhereTheRuleApplies) {
  // In id order: healthy, throw (error), unsupported. The variable applies the accelerator rule to cpu.
  const std::vector<std::string> args = {"--no-default-plugins",
                                         "--plugin-dir",
                                         test_plugins_dir(),
                                         "--filter",
                                         "^op/faults/(healthy|throw|unsupported)$",
                                         "--target",
                                         "cpu",
                                         "--quick",
                                         "--min-time",
                                         "0",
                                         "--jobs",
                                         "1"};  // one worker's log to count in
  const std::string plain = fresh_dir("hardening-fresh-plain");
  ASSERT_EQ(run_mpscheck(args, plain).exit_code, 1);
  EXPECT_EQ(count_of(read_text_file(plain + "/mpscheck-report/worker.log"), ": ready, "), 1);
  const std::string fresh = fresh_dir("hardening-fresh-rule");
  ASSERT_EQ(run_mpscheck(args, fresh, {"MPSCHECK_TEST_FRESH_WORKER_AFTER_ERROR=1"}).exit_code, 1);
  EXPECT_EQ(count_of(read_text_file(fresh + "/mpscheck-report/worker.log"), ": ready, "), 2);
  const auto cases = cases_by_id(read_json_file(fresh + "/mpscheck-report/report.json"));
  EXPECT_EQ(cases.at("op/faults/throw")["status"], "error");
  EXPECT_EQ(cases.at("op/faults/unsupported")["status"], "unsupported");
}

TEST(Hardening, GtestShardVariablesNeedShardAutoAndEveryHeaderSaysWhichShard) {
  const std::string dir = fresh_dir("hardening-shard");
  const std::vector<std::string> env = {"MPSCHECK_FIXTURE_TINY_CASES=6", "GTEST_SHARD_INDEX=1", "GTEST_TOTAL_SHARDS=3"};
  const auto all = run_mpscheck(hardening_args("^op/hardening/tiny/"), dir, env);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.err.find("| 6 cases, 0 timed | no shard |"), std::string::npos) << all.err;
  EXPECT_NE(all.err.find("set but ignored; pass --shard auto"), std::string::npos) << all.err;
  std::vector<std::string> args = hardening_args("^op/hardening/tiny/");
  args.insert(args.end(), {"--shard", "auto", "--json", "auto.json"});
  const auto slice = run_mpscheck(args, dir, env);
  ASSERT_EQ(slice.exit_code, 0) << slice.err;
  EXPECT_NE(slice.err.find("| 2 cases, 0 timed | shard 2/3 |"), std::string::npos) << slice.err;
  const auto cases = cases_by_id(read_json_file(dir + "/auto.json"));
  EXPECT_EQ(cases.size(), 2u);
  EXPECT_TRUE(cases.count("op/hardening/tiny/00001") && cases.count("op/hardening/tiny/00004"));
}

TEST(Hardening, ResumeSaysHowManyDamagedLinesItSkipped) {
  const std::string dir = fresh_dir("hardening-torn");
  const std::vector<std::string> env = {"MPSCHECK_FIXTURE_TINY_CASES=3"};
  ASSERT_EQ(run_mpscheck(hardening_args("^op/hardening/tiny/"), dir, env).exit_code, 0);
  const std::string journal = dir + "/mpscheck-report/journal.jsonl";
  std::string text = read_text_file(journal);
  ASSERT_GT(text.size(), 200u);
  text = text.substr(0, text.size() - 40);  // the last case cut in half, as a kill mid-write leaves it
  std::ofstream(journal, std::ios::trunc) << text << "\nnot json at all\n";
  std::vector<std::string> args = hardening_args("^op/hardening/tiny/");
  args.push_back("--resume");
  const auto r = run_mpscheck(args, dir, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming: 2 cases already in the journal; skipped 2 damaged lines"), std::string::npos)
      << r.err;
  EXPECT_EQ(cases_by_id(read_json_file(dir + "/mpscheck-report/report.json")).size(), 3u);
}

// ------------------------------------------------------------------------------------------------
// Bad input: every kind a new user might try, each with its exit code and one line naming it.

namespace {

struct BadInput {
  const char* kind;
  std::vector<std::string> args;
  int exit_code;
  const char* says;  // a piece of the message
  std::vector<std::string> env = {};
  // Files to create first: path -> content ("<dir>" makes a folder).
  std::vector<std::pair<std::string, std::string>> files = {};
  int max_lines = 1;
  bool before_work = false;  // also: no journal was started (an output was checked before the first case)
};

const std::string kReport = R"({"schema_version":1,"cases":[{"id":"op/a","status":"pass"}]})";

std::vector<std::string> fixture_run(std::vector<std::string> extra) {
  std::vector<std::string> args = hardening_args("^op/hardening/fds$");
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<BadInput> bad_inputs() {
  return {
      {"unknown flag", {"--all", "--frobnicate"}, 2, "unrecognised option '--frobnicate'"},
      {"flag without its value", {"--all", "--seed"}, 2, "--seed"},
      {"seed not a number", {"--all", "--seed", "abc"}, 2, "seed"},
      // Boost reads "-5" into an unsigned seed as 2^64-5: the run would record a seed nobody typed.
      {"negative seed", {"--all", "--seed", "-5"}, 2, "--seed '-5' is not a whole number from 0 to"},
      {"--model a folder", {"--model", "/tmp", "--input", "float32[2]"}, 2, "--model /tmp: is a folder, not a file"},
      {"--model a device",
       {"--model", "/dev/null", "--input", "float32[2]"},
       2,
       "--model /dev/null: is not a regular file (a device, pipe or socket)"},
      // --list reads the run's input files too: a broken one is said before anything is listed.
      {"--expect not an expectations file, with --list", {"--list", "--expect", "/etc/passwd"}, 2, "/etc/passwd:1: "},
      {"--expect a folder", fixture_run({"--expect", "/tmp"}), 2, "the expectations file /tmp: is a folder"},
      {"negative threads", {"--all", "--threads", "-1"}, 2, "--threads must be"},
      {"zero timeout", {"--all", "--timeout", "0"}, 2, "--timeout must be a positive"},
      {"negative min-time", {"--all", "--min-time", "-1"}, 2, "--min-time must be"},
      {"negative jobs", {"--all", "--jobs", "-2"}, 2, "--jobs must be 0 (automatic)"},
      {"jobs beyond any machine", {"--all", "--jobs", "100000"}, 2, "--jobs must be 0 (automatic)"},
      {"reused reference times without a cache",
       {"--all", "--reuse-reference-times"},
       2,
       "--reuse-reference-times goes with --reference-cache DIR"},
      {"reference cache under a file",
       fixture_run({"--reference-cache", "a-file/cache"}),
       2,
       "--reference-cache a-file/cache: cannot create the folder",
       {},
       {{"a-file", "x"}}},
      {"nothing selected", {"--quick"}, 2, "nothing selected"},
      {"bad filter regex", {"--filter", "("}, 2, "("},
      {"filter with a huge repeat count",
       {"--filter", "a{99999999999999999999}"},
       2,
       "is not a valid regular expression"},
      {"--expect with a huge repeat count",
       fixture_run({"--expect", "e.expect"}),
       2,
       "is not a valid regular expression",
       {},
       {{"e.expect", "op/x{8888777777777777777777}  crash\n"}}},
      {"filter matching nothing", {"--filter", "^no/such/case$", "--target", "cpu"}, 2, "no case matches"},
      // A well-formed name may be a device a plugin registers (as the sim does): it is resolved once
      // plugins are loaded, so an unknown one is "not available here" (exit 3), not bad usage.
      {"unknown target device", {"--all", "--target", "tpu"}, 3, "target 'tpu' is not available here"},
      {"unknown target dtype", {"--all", "--target", "cpu:int8"}, 2, "unknown dtype 'int8'"},
      {"target not on this machine", {"--all", "--target", "cuda"}, 3, "available targets: cpu"},
      {"unknown command", {"frobnicate"}, 2, "unknown command 'frobnicate'"},
      {"stray argument", {"env", "extra"}, 2, "unexpected argument 'extra'"},
      {"repro without a case", {"repro"}, 2, "repro takes exactly one case id"},
      {"repro of an unknown case", {"repro", "op/no/such"}, 2, "no case 'op/no/such'"},
      {"repro --from garbage",
       {"repro", "op/faults/healthy", "--plugin-dir", test_plugins_dir(), "--from", "g.json"},
       2,
       "g.json is not valid JSON",
       {},
       {{"g.json", "{{{"}}},
      {"compare with one report", {"compare", "a.json"}, 2, "compare takes two reports"},
      {"expect without --from", {"expect"}, 2, "expect drafts an expectations file from a report"},
      {"expect --from garbage", {"expect", "--from", "g.json"}, 2, "g.json is not valid JSON", {}, {{"g.json", "{{{"}}},
      {"merge --cells with one report",
       {"merge", "--cells", "a.json", "-o", "out.json"},
       2,
       "merge --cells compares at least two reports"},
      {"merge --cells with a missing report",
       {"merge", "--cells", "x=a.json", "y=b.json", "-o", "out.json"},
       2,
       "cannot read report a.json"},
      {"--cells without merge", {"--all", "--cells"}, 2, "--cells goes with merge"},
      {"compare a missing report", {"compare", "a.json", "b.json"}, 2, "cannot read report a.json"},
      {"compare garbage",
       {"compare", "a.json", "a.json"},
       2,
       "a.json is not valid JSON",
       {},
       {{"a.json", "\x01garbage"}}},
      {"compare JSON that is no report",
       {"compare", "a.json", "a.json"},
       2,
       "is not an mpscheck report",
       {},
       {{"a.json", "[1,2,3]"}}},
      {"compare a schema_version that is not a number",
       {"compare", "a.json", "a.json"},
       2,
       "schema_version is not a number",
       {},
       {{"a.json", R"({"schema_version":"1","cases":[]})"}}},
      {"compare a newer schema",
       {"compare", "a.json", "a.json"},
       2,
       "newer than this mpscheck reads",
       {},
       {{"a.json", R"({"schema_version":99,"cases":[]})"}}},
      {"compare a malformed case",
       {"compare", "a.json", "a.json"},
       2,
       "a case entry is malformed",
       {},
       {{"a.json", R"({"schema_version":1,"cases":[{"id":"x","status":"sideways"}]})"}}},
      {"merge without -o", {"merge", "a.json"}, 2, "merge takes reports and an output"},
      {"merge the same case twice",
       {"merge", "a.json", "b.json", "-o", "m.json"},
       2,
       "op/a",
       {},
       {{"a.json", kReport}, {"b.json", kReport}}},
      {"merge into an unwritable place",
       {"merge", "a.json", "-o", "f/m.json"},
       2,
       "-o f/m.json",
       {},
       {{"a.json", kReport}, {"f", "a file, not a folder"}}},
      {"--baseline garbage", fixture_run({"--baseline", "b.json"}), 2, "--baseline", {}, {{"b.json", "nope"}}},
      {"--expect missing", fixture_run({"--expect", "no.expect"}), 2, "cannot read the expectations file no.expect"},
      {"--expect unknown status",
       fixture_run({"--expect", "e.expect"}),
       2,
       "e.expect:2: unknown status 'sideways'",
       {},
       {{"e.expect", "# known\nop/.*  sideways\n"}}},
      {"--expect bad regex",
       fixture_run({"--expect", "e.expect"}),
       2,
       "is not a valid regular expression",
       {},
       {{"e.expect", "op/(  crash\n"}}},
      {"--expect unknown condition",
       fixture_run({"--expect", "e.expect"}),
       2,
       "unknown condition 'colour=blue'",
       {},
       {{"e.expect", "op/.*  crash  colour=blue\n"}}},
      {"--expect a pass status",
       fixture_run({"--expect", "e.expect"}),
       2,
       "'pass' is not a failure status",
       {},
       {{"e.expect", "op/.*  pass\n"}}},
      {"--model missing file", {"--model", "missing.pt", "--input", "float32[2]", "--target", "cpu"}, 2, "missing.pt"},
      {"--input without --model",
       {"--all", "--input", "float32[2]"},
       2,
       "--input, --model-for and --train go with --model"},
      {"--input bad form",
       {"--model", "m.pt", "--input", "float32(2)", "--target", "cpu"},
       2,
       "--input 'float32(2)' is not DTYPE[d0,d1,...]"},
      {"--input unknown dtype",
       {"--model", "m.pt", "--input", "complex7[2]", "--target", "cpu"},
       2,
       "unknown dtype 'complex7'"},
      {"--input huge dimension",
       {"--model", "m.pt", "--input", "float32[99999999999999999999]", "--target", "cpu"},
       2,
       "--input 'float32[99999999999999999999]'"},
      {"--input empty range", {"--model", "m.pt", "--input", "int64[2]:5..1", "--target", "cpu"}, 2, "LO < HI"},
      {"--plugin-dir missing", {"--all", "--plugin-dir", "no-such-dir"}, 2, "does not exist or is not a folder"},
      {"--plugin-dir with only garbage .so",
       {"--no-default-plugins", "--plugin-dir", "p", "--all", "--target", "cpu"},
       2,
       "not a loadable shared library",
       {},
       {{"p/mpscheck_garbage.so",
         "\x7f"
         "ELF but not really"}},
       2},
      {"--plugin-dir world-writable",
       {"--no-default-plugins", "--plugin-dir", "ww", "--all"},
       2,
       "is world-writable",
       {},
       {{"ww", "<dir>"}}},
      {"--report-dir is a file", fixture_run({"--report-dir", "r"}), 2, "--report-dir r", {}, {{"r", "x"}}, 1, true},
      {"--json inside a file", fixture_run({"--json", "f/r.json"}), 2, "--json f/r.json", {}, {{"f", "x"}}, 1, true},
      {"--json is a folder", fixture_run({"--json", "d"}), 2, "that is a folder", {}, {{"d", "<dir>"}}, 1, true},
      {"--junit inside a file", fixture_run({"--junit", "f/r.xml"}), 2, "--junit f/r.xml", {}, {{"f", "x"}}, 1, true},
      {"--markdown inside a file",
       fixture_run({"--markdown", "f/r.md"}),
       2,
       "--markdown f/r.md",
       {},
       {{"f", "x"}},
       1,
       true},
      {"--html inside a file", fixture_run({"--html", "f/r.html"}), 2, "--html f/r.html", {}, {{"f", "x"}}, 1, true},
      {"--bug-reports is a file", fixture_run({"--bug-reports", "b"}), 2, "--bug-reports b", {}, {{"b", "x"}}, 1, true},
      {"--shard out of range", {"--all", "--shard", "3/2"}, 2, "I must be between 1 and N"},
      {"--shard not I/N", {"--all", "--shard", "half"}, 2, "is not I/N"},
      {"--shard auto with garbage GTEST_*",
       {"--all", "--shard", "auto"},
       2,
       "are not counts",
       {"GTEST_SHARD_INDEX=x", "GTEST_TOTAL_SHARDS=2"}},
      {"--resume without a journal", fixture_run({"--resume"}), 2, "no earlier run to resume"},
      {"--resume a foreign journal",
       fixture_run({"--resume"}),
       2,
       "is not an mpscheck journal",
       {},
       {{"mpscheck-report/journal.jsonl", "hello\n"}}},
      {"--resume with another seed",
       fixture_run({"--resume", "--seed", "7"}),
       2,
       "written with seed 0",
       {},
       {{"mpscheck-report/journal.jsonl", R"({"mpscheck_journal":2,"target":"cpu","seed":0,"quick":true})"
                                          "\n"}}},
      // A journal of the format before the run's identity was recorded cannot say what it measured.
      {"--resume a format-1 journal",
       fixture_run({"--resume"}),
       2,
       "journal format 1, this one writes 2",
       {},
       {{"mpscheck-report/journal.jsonl", R"({"mpscheck_journal":1,"target":"cpu","seed":0,"quick":true})"
                                          "\n"}}},
  };
}

}  // namespace

TEST(BadInput, EveryKindExitsWithItsCodeAndOneLineNamingIt) {
  const auto table = bad_inputs();
  ASSERT_GE(table.size(), 30u);
  int n = 0;
  for (const auto& row : table) {
    SCOPED_TRACE(row.kind);
    const std::string dir = fresh_dir("bad-input-" + std::to_string(n++));
    for (const auto& [path, content] : row.files) {
      const fs::path p = fs::path(dir) / path;
      if (p.has_parent_path()) fs::create_directories(p.parent_path());
      if (content == "<dir>") {
        fs::create_directories(p);
        fs::permissions(p, fs::perms::all);  // world-writable
      } else {
        std::ofstream(p, std::ios::binary) << content;
      }
    }
    const auto r = run_mpscheck(row.args, dir, row.env);
    // The table for the record: kind | exit code | the message's last line.
    std::string last = r.err.substr(0, r.err.size() - (r.err.empty() ? 0 : 1));
    last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
    std::cout << "| " << row.kind << " | " << r.exit_code << " | " << last << " |\n";
    EXPECT_EQ(r.exit_code, row.exit_code) << r.err;
    EXPECT_NE(r.err.find(row.says), std::string::npos) << r.err;
    EXPECT_LE(count_lines(r.err), row.max_lines) << r.err;
    EXPECT_EQ(r.err.rfind("mpscheck: ", 0), 0u) << r.err;
    if (row.before_work) {
      EXPECT_FALSE(fs::exists(dir + "/mpscheck-report/journal.jsonl")) << "a case ran first";
    }
  }
}
