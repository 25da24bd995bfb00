// A ratio the timing rule did not make a claim of is said to be none, with the reason, wherever it
// is printed beside `similar` (the console showed `model/mlp/train  5.22x similar`).
#include "reports/console.hpp"
#include "reports/writers.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace mpscheck;

namespace {

CaseResult similar_at(double speedup, std::string note = {}) {
  CaseResult c;
  c.id = "model/mlp/train";
  c.status = Status::Pass;
  c.reference_time = TimingStats{1e-3, 0.9e-3, 1.1e-3, 5};
  c.target_time = TimingStats{1e-3 / speedup, 0.5e-3 / speedup, 2e-3 / speedup, 5};
  c.speedup = speedup;
  c.speed_class = SpeedClass::Similar;
  c.speed_note = std::move(note);
  return c;
}

}  // namespace

TEST(SpeedText, ASimilarBesideALargeRatioSaysWhyItIsNoClaim) {
  EXPECT_EQ(speed_text(similar_at(5.22)), "similar (noisy: not a claim)");
  EXPECT_EQ(speed_text(similar_at(0.20)), "similar (noisy: not a claim)");
  EXPECT_EQ(speed_text(similar_at(1.25,
                                  "a first round measured 1.25x (faster), a confirmation round on fresh "
                                  "instances 1.02x (similar): no claim")),
            "similar (not confirmed on fresh instances: not a claim)");
  // The busy machine is the timing rule's flag, not a word of its note.
  CaseResult busy = similar_at(3.0,
                               "a round measured 3x (faster), but the CPU reference held 40% of a core while "
                               "it was timed: the machine was busy with other work, so no claim");
  busy.host_busy = true;
  EXPECT_EQ(speed_text(busy), "similar (machine busy: not a claim)");
  busy.speed_note = "no claim (the note's words may change)";
  EXPECT_EQ(speed_text(busy), "similar (machine busy: not a claim)");
}

TEST(SpeedText, ARatioNearOneOrAClaimIsPrintedAsItsClass) {
  EXPECT_EQ(speed_text(similar_at(1.1)), "similar");
  EXPECT_EQ(speed_text(similar_at(1 / 1.1)), "similar");
  CaseResult faster = similar_at(3.0);
  faster.speed_class = SpeedClass::Faster;
  EXPECT_EQ(speed_text(faster), "faster");
  CaseResult untimed;
  EXPECT_EQ(speed_text(untimed), "-");
}

TEST(SpeedText, TheConsoleNeverPrintsALargeRatioBesideABareSimilar) {
  std::ostringstream out;
  ConsoleReporter console(out, false, false);
  console.case_finished(0, 1, similar_at(5.22));
  EXPECT_NE(out.str().find("5.22x similar (noisy: not a claim)"), std::string::npos) << out.str();
  RunReport report;
  report.cases = {similar_at(5.22), similar_at(1.05)};
  std::ostringstream summary;
  ConsoleReporter(summary, false, false).summary(report, "r.json");
  EXPECT_NE(summary.str().find("similar (noisy: not a claim)"), std::string::npos) << summary.str();
  const std::string md = render_markdown(report), html = render_html(report);
  EXPECT_NE(md.find("similar (noisy: not a claim)"), std::string::npos);
  EXPECT_NE(html.find("similar (noisy: not a claim)"), std::string::npos);
  EXPECT_NE(html.find("&#215;, not a claim</text>"), std::string::npos);
}
