// Known-issue fingerprints (reports/fingerprint.hpp): what makes two findings one upstream bug,
// the table that maps them to upstream issues, and the grouping every report shows.
#include "core/plugin_host.hpp"
#include "reports/bug_report.hpp"
#include "reports/fingerprint.hpp"
#include "reports/reporter.hpp"
#include "reports/writers.hpp"

#include <mpscheck/plugin.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

using namespace mpscheck;

namespace {

CaseResult finding(const std::string& id, Status status, const std::string& message, const std::string& failing = "") {
  CaseResult c;
  c.id = id;
  c.status = status;
  c.message = message;
  c.target = "mps";
  if (!failing.empty()) {
    OutputReport o;
    o.name = failing;
    o.ok = false;
    c.outputs.push_back(o);
  }
  return c;
}

// A made-up table for the tests (issue numbers that point nowhere on purpose: 1 and 2).
const char* kTable =
    "# a comment\n"
    "op/unary/exp  f16  *  mismatch  example#1  2.14  2.13   # made up\n"
    "op/conv/.*    *    *  unsupported  example#2  -  2.13  not implemented for 'Half'\n";

}  // namespace

TEST(Fingerprint, IsOpDtypeLayoutStatusAndTheErrorWithoutItsNumbers) {
  const auto a =
      fingerprint_of(finding("op/conv/conv2d/f16/contiguous/forward", Status::Unsupported,
                             "\"slow_conv2d_cpu\" not implemented for 'Half' (tensor 0x7f00ab12, 64 bytes)"));
  EXPECT_EQ(a.op, "op/conv/conv2d");
  EXPECT_EQ(a.dtype, "f16");
  EXPECT_EQ(a.layout, "contiguous");
  EXPECT_EQ(a.status, "unsupported");
  EXPECT_EQ(a.signature, "\"slow_conv2d_cpu\" not implemented for 'half' (tensor 0x#, # bytes)");
  // Forward and backward of one op, dtype and layout with the same error are one fingerprint.
  const auto b = fingerprint_of(finding("op/conv/conv2d/f16/contiguous/backward", Status::Unsupported,
                                        "\"slow_conv2d_cpu\" not implemented for 'Half' (tensor 0x55aa, 128 bytes)"));
  EXPECT_EQ(a.text(), b.text());
  // Another layout, dtype or status is another fingerprint; a numbers finding is keyed by its outputs.
  EXPECT_NE(fingerprint_of(finding("op/conv/conv2d/f16/transposed/forward", Status::Unsupported, "x")).text(),
            fingerprint_of(finding("op/conv/conv2d/f16/contiguous/forward", Status::Unsupported, "x")).text());
  EXPECT_EQ(
      fingerprint_of(finding("op/unary/exp/f16/contiguous/forward", Status::Mismatch, "3 of 64 off", "out")).text(),
      "op/unary/exp f16 contiguous mismatch out");
  const auto model = fingerprint_of(finding("model/vae/train", Status::Nan, "loss", "loss/step3"));
  EXPECT_EQ(model.op, "model/vae");
  EXPECT_EQ(model.dtype, "model");
  EXPECT_EQ(model.layout, "train");
}

TEST(Fingerprint, TheTableSaysKnownWithItsVersionsOrNew) {
  const auto table = parse_known_issues(kTable, "known.tsv");
  ASSERT_EQ(table.size(), 2u);
  const auto exp = fingerprint_of(finding("op/unary/exp/f16/transposed/forward", Status::Mismatch, "", "out"));
  EXPECT_EQ(known_text(match_known_issue(table, exp)), "known: example#1 (fixed in 2.14, still broken in 2.13)");
  const auto conv = fingerprint_of(finding("op/conv/conv2d/f16/contiguous/forward", Status::Unsupported,
                                           "\"slow_conv2d_cpu\" not implemented for 'Half'"));
  EXPECT_EQ(known_text(match_known_issue(table, conv)), "known: example#2 (still broken in 2.13)");
  // The signature must be in the error: another error of the same op is new.
  const auto other = fingerprint_of(finding("op/conv/conv2d/f16/contiguous/forward", Status::Unsupported, "no kernel"));
  EXPECT_EQ(known_text(match_known_issue(table, other)), "new");
  EXPECT_EQ(known_text(match_known_issue(
                table, fingerprint_of(finding("op/unary/exp/bf16/contiguous/forward", Status::Mismatch, "", "out")))),
            "new");
}

TEST(Fingerprint, AMalformedRowNamesItsFileAndLine) {
  try {
    parse_known_issues("op/a  f16  *  mismatch  example#1  -  -\nop/b f16 * weird example#1 - -\n", "t.tsv");
    FAIL() << "no error";
  } catch (const KnownIssuesError& e) {
    EXPECT_NE(std::string(e.what()).find("t.tsv:2: unknown status 'weird'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_known_issues("op/a f16 * mismatch 1234 - -\n", "t.tsv"), KnownIssuesError);
  EXPECT_THROW(parse_known_issues("op/a f16 * mismatch\n", "t.tsv"), KnownIssuesError);
  EXPECT_THROW(parse_known_issues("op/[ f16 * mismatch x#1 - -\n", "t.tsv"), KnownIssuesError);
  EXPECT_THROW(parse_known_issues("op/a f16 * pass x#1 - -\n", "t.tsv"), KnownIssuesError);
}

TEST(Fingerprint, TheShippedTableParses) {
  EXPECT_NO_THROW(load_known_issues(std::string(MPSCHECK_SOURCE_DIR) + "/expectations/known-issues.tsv"));
}

// Every shipped row names a pytorch/pytorch thread (its note gives that thread's address) and can
// match a case the shipped op plugins declare: its OP, DTYPE and LAYOUT select at least one of them.
TEST(Fingerprint, EveryShippedRowNamesAPytorchIssueAndACaseOfTheOpPlugins) {
  const auto table = load_known_issues(std::string(MPSCHECK_SOURCE_DIR) + "/expectations/known-issues.tsv");
  ASSERT_FALSE(table.empty());
  PluginHost host;
  int loaded = 0;
  for (const auto& e : std::filesystem::directory_iterator(MPSCHECK_PLUGINS_DIR)) {
    if (e.path().filename().string().rfind("mpscheck_ops_", 0) != 0) continue;
    host.load_file(e.path());
    ++loaded;
  }
  ASSERT_GE(loaded, 10) << "the op plugins are not built in " << MPSCHECK_PLUGINS_DIR;
  std::vector<Fingerprint> cases;
  for (const auto& w : host.workloads()) {
    CaseResult c;
    c.id = w.workload->id();
    cases.push_back(fingerprint_of(c));
  }
  const std::regex issue("pytorch#([1-9][0-9]*)");
  for (const auto& row : table) {
    SCOPED_TRACE("known-issues.tsv:" + std::to_string(row.line));
    std::smatch m;
    ASSERT_TRUE(std::regex_match(row.issue, m, issue)) << row.issue;
    EXPECT_NE(row.note.find("https://github.com/pytorch/pytorch/issues/" + m[1].str() + " "), std::string::npos)
        << row.note;
    const std::regex op(row.op == "*" ? ".*" : row.op);
    bool selects = false;
    for (const auto& fp : cases)
      selects |= std::regex_match(fp.op, op) && (row.dtype == "*" || row.dtype == fp.dtype) &&
                 (row.layout == "*" || row.layout == fp.layout);
    EXPECT_TRUE(selects) << row.op << " " << row.dtype << " " << row.layout << " selects no case of the op plugins";
  }
}

// The shipped rows match findings in the form a run reports them: a wrong-values finding by its op
// and dtype, an MPS gap by the aten op its message names (and not another op's gap).
TEST(Fingerprint, TheShippedRowsMatchFindingsAsARunReportsThem) {
  const auto table = load_known_issues(std::string(MPSCHECK_SOURCE_DIR) + "/expectations/known-issues.tsv");
  const auto known = [&](const std::string& id, Status status, const std::string& message) {
    return known_text(match_known_issue(table, fingerprint_of(finding(id, status, message, "out"))));
  };
  EXPECT_EQ(known("op/reduction/cumsum/bool/contiguous/forward", Status::Mismatch, "off"),
            "known: pytorch#96614 (still broken in 2.1.0.dev20230311)");
  EXPECT_EQ(known("op/reduction/cumsum/f32/contiguous/forward", Status::Mismatch, "off"), "new");
  const std::string gap =
      "The operator 'aten::_linalg_eigh.eigenvalues' is not currently implemented for the MPS device. If you "
      "want this op to be considered for addition please comment on https://github.com/pytorch/pytorch/issues/141287";
  EXPECT_EQ(known("op/linalg/eigvalsh/f32/contiguous/forward", Status::Unsupported, gap), "known: pytorch#151874");
  EXPECT_EQ(known("op/linalg/eigvalsh/f32/contiguous/forward", Status::Unsupported,
                  "The operator 'aten::linalg_qr.out' is not currently implemented for the MPS device."),
            "new");
  EXPECT_EQ(known("op/loss/ctc_zero_infinity/f32/contiguous/backward", Status::Unsupported,
                  "The operator 'aten::_ctc_loss_backward' is not currently implemented for the MPS device."),
            "known: pytorch#160829 (still broken in 2.7.1)");
}

TEST(Fingerprint, ReportsGroupFindingsByFingerprintAndSayKnownOrNew) {
  RunReport report;
  report.known_issues = parse_known_issues(kTable, "known.tsv");
  const std::string half = "\"slow_conv2d_cpu\" not implemented for 'Half'";
  report.cases = {finding("op/conv/conv2d/f16/contiguous/forward", Status::Unsupported, half),
                  finding("op/conv/conv2d/f16/contiguous/backward", Status::Unsupported, half),
                  finding("op/unary/log/f16/contiguous/forward", Status::Mismatch, "off", "out")};
  const auto groups = findings_by_fingerprint(report.cases, report.known_issues);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].findings.size(), 2u);
  EXPECT_EQ(groups[0].known, "known: example#2 (still broken in 2.13)");
  EXPECT_EQ(groups[1].known, "new");
  const auto json = report_to_json(report);
  ASSERT_EQ(json.at("fingerprints").size(), 2u);
  EXPECT_EQ(json.at("fingerprints")[0].at("cases").size(), 2u);
  EXPECT_EQ(json.at("fingerprints")[0].at("known"), "known: example#2 (still broken in 2.13)");
  const std::string md = render_markdown(report);
  EXPECT_NE(md.find("## Findings by fingerprint (2 fingerprints, 1 known upstream, 1 new)"), std::string::npos) << md;
  EXPECT_NE(md.find("| known: example#2 (still broken in 2.13) | 2 | op/conv/conv2d/f16/contiguous/backward, "
                    "op/conv/conv2d/f16/contiguous/forward |"),
            std::string::npos)
      << md;
  const std::string html = render_html(report);
  EXPECT_NE(html.find("<section id=\"fingerprints\">"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"new\">new</td>"), std::string::npos);

  // Bug reports: each file names its fingerprint, and an index groups them.
  const Reporter* bugs = nullptr;
  for (const Reporter* r : reporters())
    if (std::string(r->flag()) == "bug-reports") bugs = r;
  ASSERT_NE(bugs, nullptr);
  const auto dir = std::filesystem::temp_directory_path() / ("mpscheck-fp-" + std::to_string(::getpid()));
  std::ostringstream console;
  const ReproTarget target{};
  bugs->write(ReportContext{report, "", &target, nullptr, console, false}, dir.string());
  std::ifstream in(dir / "fingerprints.md");
  const std::string index((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  EXPECT_NE(index.find("known: example#2 (still broken in 2.13); 2 findings:"), std::string::npos) << index;
  EXPECT_NE(index.find("new; 1 finding:"), std::string::npos) << index;
}
