// The HTML report as a browser sees it: Debian's Chromium, headless, loads the file from a run with
// planted faults, runs its script, and the resulting DOM still has the charts, the findings table
// with every finding, and the coverage matrix; a screenshot of the page is a real, non-blank image.
#include "harness.hpp"
#include "sim_common.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

using namespace mpscheck::testing;
namespace fs = std::filesystem;

namespace {

std::string chromium() {
  for (const char* exe : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (fs::exists(exe)) return exe;
  return {};
}

std::string headless(const std::string& exe, const std::string& dir) {
  // A private profile and no background traffic: the page is a local file and nothing else loads.
  return exe +
         " --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update "
         "--no-first-run --user-data-dir='" +
         dir + "/profile'";
}

}  // namespace

TEST(HtmlInBrowser, ChromiumRendersChartsAndTheFindingsTable) {
  const std::string exe = chromium();
  ASSERT_FALSE(exe.empty()) << "Chromium is not installed: scripts/install-deps.sh --with-test-tools installs it";
  const std::string dir = fresh_dir("html-browser");
  const auto r = run_mpscheck(
      {"--filter", "op/faults/(healthy|wrong|nan|unsupported|slow)$|op/shape/cat/f32/contiguous", "--plugin-dir",
       test_plugins_dir(), "--target", "cpu", "--quick", "--min-time", "0.02", "--html", "report.html"},
      dir);
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const auto dom = run_shell(headless(exe, dir) + " --dump-dom 'file://" + dir + "/report.html' 2>/dev/null", dir);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  const std::string& page = dom.out;
  EXPECT_NE(page.find("aria-label=\"speedup per case, log scale\""), std::string::npos);
  EXPECT_NE(page.find("aria-label=\"max abs error per case, log scale\""), std::string::npos);
  const auto findings = page.find("<section id=\"findings\">");
  ASSERT_NE(findings, std::string::npos);
  const auto coverage = page.find("<section id=\"coverage\">");
  EXPECT_NE(coverage, std::string::npos);
  for (const char* id : {"op/faults/wrong", "op/faults/nan", "op/faults/unsupported"}) {
    const auto at = page.find(id, findings);
    EXPECT_NE(at, std::string::npos) << id << " is missing from the findings table";
  }
  const auto shot = run_shell(headless(exe, dir) + " --window-size=1280,2000 --screenshot='" + dir +
                                  "/shot.png' 'file://" + dir + "/report.html' >/dev/null 2>&1",
                              dir);
  ASSERT_EQ(shot.exit_code, 0);
  ASSERT_TRUE(fs::exists(dir + "/shot.png"));
  const std::string png = read_text_file(dir + "/shot.png");
  EXPECT_EQ(png.substr(1, 3), "PNG");
  // A blank 1280x2000 page compresses to a few KB; text, tables and charts do not.
  EXPECT_GT(png.size(), 30000u);
}

// The answer first, as a browser lays it out: the recommendations per workload class and the findings
// grouped by op come before the environment, which is folded; one op's group holds its dtype x
// layout/direction matrix with the planted bug's cells (the sim's `transposed` class: gelu wrong only
// on non-contiguous inputs) and its passing cells side by side.
TEST(HtmlInBrowser, TheVerdictAndGroupedFindingsComeBeforeTheEnvironment) {
  const std::string exe = chromium();
  ASSERT_FALSE(exe.empty()) << "Chromium is not installed: scripts/install-deps.sh --with-test-tools installs it";
  const std::string dir = fresh_dir("html-browser-order");
  const auto r = run_mpscheck(on_sim({"--filter", "op/activation/gelu/", "--min-time", "0", "--html", "report.html"}),
                              dir, {"MPSCHECK_SIM_BUGS=transposed"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const auto dom = run_shell(headless(exe, dir) + " --dump-dom 'file://" + dir + "/report.html' 2>/dev/null", dir);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  const std::string& page = dom.out;
  const auto verdict = page.find("<section id=\"verdict\">"), findings = page.find("<section id=\"findings\">"),
             environment = page.find("<section id=\"environment\">");
  ASSERT_NE(verdict, std::string::npos);
  ASSERT_NE(findings, std::string::npos);
  ASSERT_NE(environment, std::string::npos);
  EXPECT_LT(verdict, findings);
  EXPECT_LT(findings, environment);
  EXPECT_NE(page.find(">blocked</span>", verdict), std::string::npos);
  // The environment is folded: its <details> has no `open`.
  const auto env_details = page.find("<details>", environment);
  EXPECT_LT(env_details, page.find("<table class=\"env\">", environment));
  // The gelu group: its matrix holds the planted transposed/sliced mismatches and the passing
  // contiguous cases of the same dtypes.
  const auto group = page.find("data-op=\"op/activation/gelu\"", findings);
  ASSERT_NE(group, std::string::npos);
  const auto end = page.find("</details>", page.find("<table class=\"findings\">", group));
  const std::string g = page.substr(group, end - group);
  EXPECT_NE(g.find("title=\"op/activation/gelu/f32/transposed/forward: mismatch\""), std::string::npos) << g;
  EXPECT_NE(g.find("title=\"op/activation/gelu/f32/contiguous/forward: pass\""), std::string::npos) << g;
  EXPECT_NE(g.find("<th>f32</th>"), std::string::npos);
  EXPECT_NE(g.find("<th>transposed/forward</th>"), std::string::npos);
}

// Two cells of one catalog: the planted wrong element is there in one and not in the other
// (MPSCHECK_FAULTS_WRONG_BY=0), the NaN in both, the throw only in the cell that ran it. The merged
// JSON labels them cell-specific, everywhere and new, and Chromium renders the case x cell matrix.
TEST(HtmlInBrowser, CellsMatrixLabelsWhereEachFindingAppears) {
  const std::string exe = chromium();
  ASSERT_FALSE(exe.empty()) << "Chromium is not installed: scripts/install-deps.sh --with-test-tools installs it";
  const std::string dir = fresh_dir("html-cells");
  const std::vector<std::string> common{"--plugin-dir", test_plugins_dir(), "--no-default-plugins", "--target",
                                        "cpu",          "--quick",          "--min-time",           "0"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), common.begin(), common.end());
    return args;
  };
  const auto a = run_mpscheck(
      with({"--filter", "op/faults/(healthy|wrong|nan|throw)$", "--json", "a.json", "--report-dir", "ra"}), dir);
  ASSERT_EQ(a.exit_code, 1) << a.err;
  const auto b =
      run_mpscheck(with({"--filter", "op/faults/(healthy|wrong|nan)$", "--json", "b.json", "--report-dir", "rb"}), dir,
                   {"MPSCHECK_FAULTS_WRONG_BY=0"});
  ASSERT_EQ(b.exit_code, 1) << b.err;
  const auto m = run_mpscheck(
      {"merge", "--cells", "image-a=a.json", "image-b=b.json", "-o", "cells.json", "--html", "cells.html"}, dir);
  EXPECT_EQ(m.exit_code, 1) << m.err;  // unexpected findings in the cells
  EXPECT_NE(m.out.find("cell-specific: op/faults/wrong (image-a mismatch, image-b pass)"), std::string::npos) << m.out;
  std::map<std::string, std::string> labels;
  const auto merged = read_json_file(dir + "/cells.json");
  for (const auto& c : merged.at("cases")) labels[c.at("id").get<std::string>()] = c.value("label", std::string());
  ASSERT_EQ(labels.size(), 4u) << read_text_file(dir + "/cells.json");
  EXPECT_EQ(labels.at("op/faults/wrong"), "cell-specific");
  EXPECT_EQ(labels.at("op/faults/nan"), "everywhere");
  EXPECT_EQ(labels.at("op/faults/throw"), "new");
  EXPECT_EQ(labels.at("op/faults/healthy"), "");

  const auto dom = run_shell(headless(exe, dir) + " --dump-dom 'file://" + dir + "/cells.html' 2>/dev/null", dir);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  const std::string& page = dom.out;
  const auto matrix = page.find("<section id=\"matrix\">");
  ASSERT_NE(matrix, std::string::npos) << page.substr(0, 2000);
  EXPECT_NE(page.find("<th>image-a</th><th>image-b</th>", matrix), std::string::npos);
  const auto row = page.find("<tr data-label=\"cell-specific\"><td class=\"id\">op/faults/wrong</td>", matrix);
  ASSERT_NE(row, std::string::npos) << page.substr(matrix, 3000);
  const auto row_end = page.find("</tr>", row);
  const std::string cells = page.substr(row, row_end - row);
  EXPECT_LT(cells.find(">mismatch<"), cells.find(">pass<")) << cells;
  EXPECT_NE(page.find("<td class=\"id\">op/faults/throw</td><td><span class=\"label l-new\">new</span></td>"),
            std::string::npos);
  EXPECT_NE(page.find("not run", page.find("op/faults/throw</td>")), std::string::npos);
  // Cell-specific rows lead the matrix: the drift is what the page is for.
  EXPECT_LT(page.find("op/faults/wrong</td>", matrix), page.find("op/faults/nan</td>", matrix));
  const auto shot = run_shell(headless(exe, dir) + " --window-size=1000,800 --screenshot='" + dir +
                                  "/cells.png' 'file://" + dir + "/cells.html' >/dev/null 2>&1",
                              dir);
  ASSERT_EQ(shot.exit_code, 0);
  EXPECT_GT(fs::file_size(dir + "/cells.png"), 10000u);
}
