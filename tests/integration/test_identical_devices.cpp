// CPU against CPU is the control experiment: identical device and dtype must give no finding and
// must not be called faster or slower unless the measured ranges really separate, run after run.
#include "harness.hpp"

#include <gtest/gtest.h>

using namespace mpscheck::testing;

TEST(IdenticalDevices, TwoRunsInARowFindNothingAndCallNothingFasterOnOverlappingRanges) {
  // Ops from several families and a model, with real timing (the default --min-time under --quick).
  const std::vector<std::string> args{"--filter", "op/(activation|linalg|reduction|conv)/.*/f32/contiguous/|model/mlp/",
                                      "--target", "cpu", "--quick"};
  int classified = 0, total = 0;
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run + 1));
    const std::string dir = fresh_dir("identical-" + std::to_string(run));
    const auto r = run_mpscheck(args, dir);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto report = read_json_file(dir + "/mpscheck-report/report.json");
    EXPECT_EQ(report["summary"].value("pass", 0), report["summary"]["total"].get<int>());
    for (const auto& [id, c] : cases_by_id(report)) {
      ++total;
      EXPECT_EQ(c["status"], "pass") << id << ": " << c["message"];
      EXPECT_EQ(c["nondeterministic"], false) << id;
      const std::string cls = c["speed_class"];
      if (cls == "similar") continue;
      ++classified;
      const auto& ref = c["reference_time"];
      const auto& tgt = c["target_time"];
      const bool separate = tgt["p75_s"].get<double>() < ref["p25_s"].get<double>() ||
                            ref["p75_s"].get<double>() < tgt["p25_s"].get<double>();
      EXPECT_TRUE(separate) << id << " called " << cls << " with overlapping ranges: " << ref << " vs " << tgt;
    }
  }
  // Interleaved blocks put machine drift on both sides: separated ranges stay the exception.
  EXPECT_LT(classified * 10, total) << classified << " of " << total << " identical-device cases got a speed class";
}
