// CPU against CPU is the control experiment: identical device and dtype must give no finding and
// no speed claim. One interleaved measurement can separate two instances of the same computation
// (where their memory landed), so a claim must survive a second round on fresh instances.
#include "harness.hpp"

#include <gtest/gtest.h>

using namespace mpscheck::testing;

TEST(IdenticalDevices, TwoRunsInARowFindNothingAndClaimNoSpeedDifference) {
  // Ops from several families and a model; --quick times one contiguous forward per op, and the model.
  const std::vector<std::string> args{"--filter", "op/(activation|linalg|reduction|conv)/.*/f32/contiguous/|model/mlp/",
                                      "--target", "cpu",
                                      "--quick",  "--min-time",
                                      "0.01"};
  int timed = 0;
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run + 1));
    const std::string dir = fresh_dir("identical-" + std::to_string(run));
    const auto r = run_mpscheck(args, dir);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto report = read_json_file(dir + "/mpscheck-report/report.json");
    EXPECT_EQ(report["summary"].value("pass", 0), report["summary"]["total"].get<int>());
    for (const auto& [id, c] : cases_by_id(report)) {
      EXPECT_EQ(c["status"], "pass") << id << ": " << c["message"];
      EXPECT_EQ(c["nondeterministic"], false) << id;
      if (!c["timed"].get<bool>()) continue;
      ++timed;
      EXPECT_EQ(c["speed_class"], "similar") << id << ": " << c.value("speed_note", "") << "; reference "
                                             << c["reference_time"] << " target " << c["target_time"];
    }
  }
  EXPECT_GT(timed, 20) << "the control must time enough cases to mean something";
}
