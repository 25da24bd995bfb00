// The `dtype` attribution through the real binary: a finding (a NaN, or an error the target raised)
// that the CPU's own run in the target dtype makes too is the dtype's hazard, not a target bug.
// mnist_cnn trained in float16 turns NaN at its first step on any device (Adam's eps underflows in
// float16), on the sim as on the CPU; the sim's softmax-f16 class is a NaN only the device makes
// (no max subtraction on a long row), and stays the target's.
#include "sim_common.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace mpscheck::testing;
namespace fs = std::filesystem;

TEST(SimDtypeAttribution, Float16AdamNaNIsTheDtypesAndItsBugReportSaysSoBeforeFiling) {
  const std::string dir = fresh_dir("sim-dtype-attribution");
  const auto r = run_mpscheck(on_sim({"--target", "sim:float16", "--filter", "^model/mnist_cnn/train$", "--min-time",
                                      "0", "--json", "r.json", "--bug-reports", "bugs"}),
                              dir);
  const auto cases = cases_by_id(read_json_file(dir + "/r.json"));
  ASSERT_TRUE(cases.count("model/mnist_cnn/train")) << r.out << r.err;
  const auto& c = cases.at("model/mnist_cnn/train");
  EXPECT_EQ(c["status"], "nan") << "the result is NaN: it is not usable, whoever is to blame";
  EXPECT_EQ(c["attribution"], "dtype") << c.dump(2);
  const std::string message = c["message"];
  EXPECT_NE(message.find("the CPU's own float16 run is NaN/Inf too"), std::string::npos) << message;
  EXPECT_NE(c["reason"].get<std::string>().find("keep this case in float32"), std::string::npos) << c.dump(2);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  int reports = 0;
  for (const auto& f : fs::directory_iterator(dir + "/bugs")) {
    if (f.path().filename() == "fingerprints.md") continue;
    const std::string text = read_text_file(f.path().string());
    EXPECT_NE(text.find("**Before filing:** the CPU's own float16 run breaks the same way"), std::string::npos) << text;
    EXPECT_NE(text.find("the fragile side is: float16 itself"), std::string::npos) << text;
    ++reports;
  }
  EXPECT_EQ(reports, 1);
}

TEST(SimDtypeAttribution, ANaNOnlyTheDeviceMakesStaysTheTargets) {
  const std::string dir = fresh_dir("sim-dtype-attribution-control");
  const auto r = run_mpscheck(
      on_sim({"--filter", "^op/softmax/softmax_wide/f16/contiguous/forward$", "--min-time", "0", "--json", "r.json"}),
      dir, {"MPSCHECK_SIM_BUGS=softmax-f16"});
  const auto cases = cases_by_id(read_json_file(dir + "/r.json"));
  ASSERT_EQ(cases.size(), 1u) << r.out << r.err;
  const auto& c = cases.begin()->second;
  EXPECT_EQ(c["status"], "nan") << c.dump(2);
  EXPECT_EQ(c["attribution"], "target") << c.dump(2);
  EXPECT_EQ(c["message"].get<std::string>().find("hazard"), std::string::npos) << c["message"];
}

// DCGAN trained in float16: its discriminator's sigmoid output turns NaN, and binary cross-entropy
// refuses it, on the CPU's own float16 run as on the sim: an error of the dtype. A target error the
// CPU's run does not raise (the sim's sync-error class, hypot's failure at the next synchronize)
// stays the target's.
TEST(SimDtypeAttribution, AnErrorTheCpusOwnRunRaisesTooIsTheDtypesAndOneItDoesNotIsTheTargets) {
  const std::string dir = fresh_dir("sim-dtype-attribution-error");
  const auto r = run_mpscheck(
      on_sim({"--target", "sim:float16", "--filter", "^model/dcgan/train$", "--min-time", "0", "--json", "r.json"}),
      dir);
  const auto cases = cases_by_id(read_json_file(dir + "/r.json"));
  ASSERT_TRUE(cases.count("model/dcgan/train")) << r.out << r.err;
  const auto& c = cases.at("model/dcgan/train");
  EXPECT_EQ(c["status"], "error");
  EXPECT_EQ(c["phase"], "target");
  EXPECT_EQ(c["attribution"], "dtype") << c.dump(2);
  EXPECT_NE(c["message"].get<std::string>().find("the CPU's own float16 run raises the same"), std::string::npos)
      << c["message"];

  const std::string other = fresh_dir("sim-dtype-attribution-error-control");
  run_mpscheck(on_sim({"--target", "sim:bfloat16", "--filter", "^op/binary/hypot/f32/contiguous/forward$", "--min-time",
                       "0", "--json", "r.json"}),
               other, {"MPSCHECK_SIM_BUGS=sync-error"});
  const auto control = cases_by_id(read_json_file(other + "/r.json"));
  ASSERT_EQ(control.size(), 1u);
  const auto& h = control.begin()->second;
  EXPECT_EQ(h["status"], "error");
  EXPECT_EQ(h["phase"], "target");
  EXPECT_EQ(h["attribution"], "") << h.dump(2);
}
