// Drift across cells: each finding labelled by where it appears among several runners' reports.
#include "core/workflow.hpp"
#include "reports/cells.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace mpscheck;

namespace {

std::string write_report(const std::string& name, const std::string& target,
                         const std::vector<std::pair<std::string, Status>>& cases) {
  RunReport r;
  r.environment = {{"torch_version", "2.13.0"}, {"os", "macOS 15.3"}, {"cpu", "Apple M1"}};
  r.run = {{"target", target}};
  for (const auto& [id, status] : cases) {
    CaseResult c;
    c.id = id;
    c.status = status;
    c.message = status == Status::Pass ? "" : "planted <b>" + id + "</b>";
    r.cases.push_back(c);
  }
  const auto dir = std::filesystem::temp_directory_path() / "mpscheck-test-cells";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  write_json_report(path, r);
  return path;
}

}  // namespace

TEST(Cells, LabelsSayWhereAFindingAppears) {
  using S = Status;
  EXPECT_EQ(cell_label({S::Mismatch, S::Mismatch}, {true, true}), "everywhere");
  EXPECT_EQ(cell_label({S::Mismatch, S::Pass}, {true, true}), "cell-specific");
  EXPECT_EQ(cell_label({S::Crash, S::Skip}, {true, false}), "new");  // the other cell did not run it
  EXPECT_EQ(cell_label({S::Nan, S::Skip}, {true, true}), "new");     // nor could it (skip)
  EXPECT_EQ(cell_label({S::Pass, S::Pass}, {true, true}), "");
  EXPECT_EQ(cell_label({S::Unsupported, S::Mismatch, S::Pass}, {true, true, true}), "cell-specific");
}

TEST(Cells, MergeLabelsEveryCaseAndTheHtmlEscapesMessages) {
  const std::string a = write_report(
      "a.json", "mps",
      {{"op/x", Status::Mismatch}, {"op/y", Status::Nan}, {"op/z", Status::Pass}, {"op/only_a", Status::Crash}});
  const std::string b =
      write_report("b.json", "mps", {{"op/x", Status::Mismatch}, {"op/y", Status::Pass}, {"op/z", Status::Pass}});
  bool unexpected = false;
  const CellMatrix m = merge_cells({"macos15=" + a, "macos26=" + b}, unexpected);
  EXPECT_TRUE(unexpected);  // no expectations: every finding is unexpected
  ASSERT_EQ(m.cells.size(), 2u);
  EXPECT_EQ(m.cells[0].name, "macos15");
  const auto j = cells_to_json(m);
  std::map<std::string, std::string> labels;
  for (const auto& c : j.at("cases")) labels[c.at("id")] = c.value("label", "");
  EXPECT_EQ(labels.at("op/x"), "everywhere");
  EXPECT_EQ(labels.at("op/y"), "cell-specific");
  EXPECT_EQ(labels.at("op/z"), "");
  EXPECT_EQ(labels.at("op/only_a"), "new");
  EXPECT_TRUE(j.at("cases")[0].at("statuses").contains("macos26"));
  EXPECT_EQ(j.at("labels").at("cell-specific"), 1);
  const std::string html = render_cells_html(m);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("planted &lt;b&gt;op/y"), std::string::npos);
  // Unnamed cells with one target are told apart by their files.
  const CellMatrix unnamed = merge_cells({a, b}, unexpected);
  EXPECT_NE(unnamed.cells[0].name, unnamed.cells[1].name);
}

TEST(Cells, BadInputNamesTheFile) {
  bool unexpected = false;
  const std::string a = write_report("c.json", "mps", {{"op/x", Status::Pass}});
  try {
    merge_cells({a, "/nonexistent/b.json"}, unexpected);
    FAIL() << "a missing report was accepted";
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/b.json"), std::string::npos) << e.what();
  }
  EXPECT_THROW(merge_cells({a}, unexpected), ReportError);
  EXPECT_THROW(merge_cells({"same=" + a, "same=" + a}, unexpected), ReportError);
}
