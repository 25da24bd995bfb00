// Catalog recall against the sim device's planted kernel bugs (plugins/sim/recall.tsv): for each
// bug class and target dtype (sim, sim:float16, sim:bfloat16), one run with only that bug planted
// must report the right kind of finding on the cases that call the planted kernel, name the first
// bad element or the diverging layer where the table says so, and report nothing anywhere else.
// Every case of the allowed set that does not catch the bug is counted as a miss: CI fails when
// its subset misses more than the table allows. The honest control (expect "none") must give no
// finding at all. CI runs each row on its "ci" subset of the catalog; scripts/recall.sh sets
// MPSCHECK_RECALL_FULL=1 to run each over the "full" selection and prints the misses it counts.
#include "sim_common.hpp"

#include "checks/result.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

using namespace mpscheck::testing;

namespace {

struct Plant {
  std::string bug, target, expect, cases, names, misses, ci, full;
};

bool full_sweep() {
  const char* v = std::getenv("MPSCHECK_RECALL_FULL");
  return v && std::string(v) == "1";
}

std::vector<Plant> read_table() {
  std::vector<Plant> rows;
  std::ifstream in(std::string(MPSCHECK_SOURCE_DIR) + "/plugins/sim/recall.tsv");
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Plant p;
    fields >> p.bug >> p.target >> p.expect >> p.cases >> p.names >> p.misses >> p.ci >> p.full;
    // A row without a CI subset belongs to the full sweep only.
    if (!p.full.empty() && (p.ci != "-" || full_sweep())) rows.push_back(p);
  }
  return rows;
}

std::vector<std::string> selection(const Plant& p) {
  const std::string s = full_sweep() ? p.full : p.ci;
  if (s == "ops") return {"--ops"};
  if (s == "all") return {"--all"};
  return {"--filter", s};
}

CommandResult run_with_bug(const Plant& p, const std::string& bug, const std::string& dir) {
  std::vector<std::string> args = selection(p);
  args.insert(args.end(), {"--target", p.target});
  // Timing only where the plant is about speed; a hang needs a short deadline.
  args.insert(args.end(),
              {"--min-time", p.expect == "slower" ? "0.05" : "0", "--timeout",
               p.expect == "timeout" || p.expect == "exit3" ? "10" : "300", "--expect", sim_expectations()});
  return run_mpscheck(on_sim(args), dir, {"MPSCHECK_SIM_BUGS=" + bug});
}

bool knows_status(const std::string& s) {
  if (s == "slower" || s == "exit3") return true;
  try {
    mpscheck::status_from_string(s);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

std::string shorten(std::string s, size_t n = 160) { return s.size() > n ? s.substr(0, n) + "..." : s; }

class SimRecall : public ::testing::TestWithParam<Plant> {};

TEST_P(SimRecall, CatalogFindsThePlantedBugAndNothingElse) {
  const Plant& p = GetParam();
  const std::string dir = fresh_dir("sim-recall-" + p.bug + "-" + p.target);
  const CommandResult r = run_with_bug(p, p.bug, dir);
  std::ostringstream row;
  row << "recall | " << p.bug << " | " << p.target << " | ";

  if (p.expect == "exit3") {
    // The probe stops the run before any case: exit 3 and one line quoting the device.
    EXPECT_EQ(r.exit_code, 3) << r.err;
    const auto line = r.err.find("mpscheck: target 'sim' is present but unusable");
    ASSERT_NE(line, std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin() + line, r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(read_text_file(dir + "/mpscheck-report/journal.jsonl").find("\"id\""), std::string::npos);
    row << "probe | exit " << r.exit_code << " | " << shorten(r.err.substr(line, r.err.find('\n', line) - line), 240);
    std::cout << row.str() << std::endl;
    return;
  }

  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  const std::regex allowed(p.cases);
  if (p.expect == "none") {
    // The honest control: a kernel within a unit of rounding everywhere is no finding anywhere.
    std::vector<std::string> findings;
    for (const auto& c : report.at("cases")) {
      const std::string status = c.at("status").get<std::string>();
      if (status != "pass" && status != "skip" && !c.value("expected", false))
        findings.push_back(c.at("id").get<std::string>() + " (" + status + ": " + shorten(c.value("message", "")) +
                           ")");
    }
    EXPECT_GT(report.at("cases").size(), 0u);
    EXPECT_TRUE(findings.empty()) << p.bug << ": honest rounding reported: " << ::testing::PrintToString(findings);
    row << "none | " << findings.size() << " findings in " << report.at("cases").size() << " cases | -";
    std::cout << row.str() << std::endl;
    return;
  }
  if (!knows_status(p.expect)) {
    // A verdict this build does not have yet (`fallback` comes with the warnings capture): the
    // plant must then pass unnoticed, which is what the new verdict is for.
    for (const auto& c : report.at("cases")) EXPECT_EQ(c.at("status"), "pass") << c.at("id");
    std::cout << row.str() << p.expect << " | pending: this build has no '" << p.expect << "' verdict; "
              << report.at("cases").size() << " cases pass unnoticed" << std::endl;
    return;
  }
  std::vector<std::string> caught, unrelated, wrong_kind, unnamed, missed;
  std::string message;
  for (const auto& c : report.at("cases")) {
    const std::string id = c.at("id").get<std::string>();
    const std::string status = c.at("status").get<std::string>();
    const bool finding = p.expect == "slower" ? c.value("speed_class", "") == "slower" && c.value("speedup", 1.0) < 0.2
                                              : status != "pass" && status != "skip" && !c.value("expected", false);
    // A miss: a case the bug is planted under that ran and reported nothing.
    if (!finding && std::regex_search(id, allowed) && status != "skip" && !c.value("expected", false))
      missed.push_back(id);
    if (!finding) continue;
    if (!std::regex_search(id, allowed)) {
      unrelated.push_back(id + " (" + status + ": " + shorten(c.value("message", "")) + ")");
      continue;
    }
    if (p.expect != "slower" && status != p.expect) {
      wrong_kind.push_back(id + " (" + status + ")");
      continue;
    }
    caught.push_back(id);
    if (message.empty())
      message = p.expect == "slower" ? "speedup " + std::to_string(c.value("speedup", 0.0)) : c.value("message", "");
    const bool model = id.rfind("model/", 0) == 0;
    if (model && p.names.find("layer") != std::string::npos && layer_of(c).empty()) unnamed.push_back(id);
    if (!model && p.names.find("index") != std::string::npos &&
        c.value("message", "").find("first at [") == std::string::npos)
      unnamed.push_back(id);
    // says=TEXT: the message must contain TEXT (what is wrong: "bias", the output of the step).
    for (size_t at = p.names.find("says="); at != std::string::npos; at = p.names.find("says=", at + 1)) {
      const std::string text = p.names.substr(at + 5, p.names.find(',', at) - at - 5);
      if (c.value("message", "").find(text) == std::string::npos) unnamed.push_back(id + " (no '" + text + "')");
    }
  }
  EXPECT_FALSE(caught.empty()) << p.bug << ": no case caught it\n" << r.err.substr(0, 2000);
  EXPECT_TRUE(unrelated.empty()) << p.bug << ": unrelated findings: " << ::testing::PrintToString(unrelated);
  EXPECT_TRUE(wrong_kind.empty()) << p.bug << ": expected " << p.expect << ": " << ::testing::PrintToString(wrong_kind);
  EXPECT_TRUE(unnamed.empty()) << p.bug
                               << ": without the first bad element / layer: " << ::testing::PrintToString(unnamed);
  // The CI subset may miss at most the table's count; the full sweep reports what it counts.
  if (!full_sweep() && p.misses != "-") {
    EXPECT_LE(missed.size(), std::stoul(p.misses))
        << p.bug << " on " << p.target << ": missed by " << ::testing::PrintToString(missed);
  }
  row << p.expect << " | caught " << caught.size() << ", missed " << missed.size() << ": ";
  for (size_t i = 0; i < caught.size() && i < 4; ++i) row << (i ? ", " : "") << caught[i];
  if (caught.size() > 4) row << ", ...";
  if (!missed.empty()) row << "; missed " << missed.front() << (missed.size() > 1 ? ", ..." : "");
  row << " | " << shorten(message, 240);
  std::cout << row.str() << std::endl;

  if (p.expect == "slower") {
    // The same cases on a clean sim device are not ten times slower: the plant is what shows.
    const std::string clean_dir = fresh_dir("sim-recall-slow-clean");
    const CommandResult clean = run_with_bug(p, "", clean_dir);
    ASSERT_TRUE(clean.exit_code == 0 || clean.exit_code == 1) << clean.err;
    const auto clean_cases = cases_by_id(read_json_file(clean_dir + "/mpscheck-report/report.json"));
    for (const auto& id : caught) EXPECT_GE(clean_cases.at(id).value("speedup", 0.0), 0.2) << id;
  }
}

INSTANTIATE_TEST_SUITE_P(Plants, SimRecall, ::testing::ValuesIn(read_table()),
                         [](const ::testing::TestParamInfo<Plant>& info) {
                           std::string name = info.param.bug;
                           // sim:bfloat16 -> name_bfloat16; the float32 rows keep the class's name.
                           if (const auto colon = info.param.target.find(':'); colon != std::string::npos)
                             name += "_" + info.param.target.substr(colon + 1);
                           // size-2^n -> size_2_n: a test name holds letters, digits and '_' only.
                           std::replace_if(
                               name.begin(), name.end(), [](unsigned char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

}  // namespace
