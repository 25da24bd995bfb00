// `merge` decides its exit code by the same rule as a run: an unexpected finding or an unexpected
// pass fails it. It used to look at findings only, so a shard whose listed failure had been fixed
// merged green.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <fstream>

using namespace mpscheck::testing;

TEST(MergeExit, AnUnexpectedPassFailsTheMergeAsItFailsTheRun) {
  const std::string dir = fresh_dir("merge-unexpected-pass");
  std::ofstream(dir + "/known.expect") << "op/faults/healthy  mismatch  # fixed upstream since\n";
  const std::vector<std::string> run = {"--filter",
                                        "op/faults/healthy$",
                                        "--plugin-dir",
                                        test_plugins_dir(),
                                        "--no-default-plugins",
                                        "--target",
                                        "cpu",
                                        "--quick",
                                        "--min-time",
                                        "0",
                                        "--expect",
                                        "known.expect",
                                        "--json",
                                        "shard.json"};
  const auto r = run_mpscheck(run, dir);
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  ASSERT_TRUE(cases_by_id(read_json_file(dir + "/shard.json")).at("op/faults/healthy")["unexpected_pass"].get<bool>());

  const auto m = run_shell("'" + binary() + "' merge shard.json -o merged.json", dir);
  EXPECT_EQ(m.exit_code, 1) << m.out << m.err;

  // Without the stale expectation the same shard merges clean.
  const auto clean =
      run_mpscheck({"--filter", "op/faults/healthy$", "--plugin-dir", test_plugins_dir(), "--no-default-plugins",
                    "--target", "cpu", "--quick", "--min-time", "0", "--json", "clean.json", "--report-dir", "clean"},
                   dir);
  ASSERT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_EQ(run_shell("'" + binary() + "' merge clean.json -o merged-clean.json", dir).exit_code, 0);
}
