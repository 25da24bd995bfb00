// Every run clean and every output compared, through the real binary (issue 23 items 1-3 and 5):
// a model that mutates or returns its input, a .pt file swapped under a reference cache, outputs
// that are ints, strings, missing, extra or named alike, a reference that is not deterministic,
// and crashes or hangs outside the target's run. The models come from
// tests/fixtures/export_owned_models.py (the installed torch wheel's python3); the crashing cases
// from the test-only plugin tests/fixtures/phase_cases.cpp.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace mpscheck::testing;
namespace fs = std::filesystem;

namespace {

class OwnedModels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fresh_dir("owned-models");
    const std::string script = std::string(MPSCHECK_SOURCE_DIR) + "/tests/fixtures/export_owned_models.py";
    const auto r = run_shell("python3 " + script + " .", dir_);
    log_ = r.out + r.err;
    exported_ = r.exit_code == 0;
  }
  void SetUp() override { ASSERT_TRUE(exported_) << "python3 with torch could not export the models: " << log_; }
  static std::string model(const std::string& name) { return dir_ + "/" + name + ".pt"; }

  // Runs one --model case and returns its infer case from the JSON report.
  static nlohmann::json run_case(const std::string& test, const std::string& path, const std::string& input,
                                 const std::string& target, std::vector<std::string> extra = {}) {
    const std::string dir = fresh_dir("owned-" + test);
    std::vector<std::string> args{"--model", path,         "--input", input,    "--target", target,
                                  "--quick", "--min-time", "0",       "--json", "r.json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_mpscheck(args, dir);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out << r.err;
    const auto cases = cases_by_id(read_json_file(dir + "/r.json"));
    EXPECT_EQ(cases.size(), 1u);
    return cases.begin()->second;
  }

  static inline std::string dir_, log_;
  static inline bool exported_ = false;
};

const nlohmann::json* output_named(const nlohmann::json& c, const std::string& name) {
  for (const auto& o : c.at("outputs"))
    if (o.at("name") == name) return &o;
  return nullptr;
}

std::string message(const nlohmann::json& c) { return c.at("message").get<std::string>(); }

}  // namespace

// x.sub_(0.5).div_(0.25) normalised twice when the determinism check re-ran the same instance: the
// atol was widened to the spread and a target 20% off on 80 of 160 elements passed.
TEST_F(OwnedModels, AModelThatNormalisesItsInputInPlaceIsCheckedOnAFreshInstance) {
  for (const char* target : {"cpu:bfloat16", "cpu:float16"}) {
    const auto c = run_case(std::string("stateful-") + target, model("stateful"), "float32[10,16]", target);
    EXPECT_EQ(c["status"], "mismatch") << target << ": " << c.dump();
    EXPECT_FALSE(c["nondeterministic"].get<bool>()) << target;
    EXPECT_LE(c["atol"].get<double>(), 5e-2) << target;  // at most the plain model tolerance, never a spread
    ASSERT_NE(output_named(c, "out"), nullptr);
    // Of the 80 planted elements, those near zero stay inside the atol.
    const int bad = (*output_named(c, "out"))["mismatches"].get<int>();
    EXPECT_GT(bad, 60) << target;
    EXPECT_LE(bad, 80) << target;
  }
  // The clean float32 target passes, and the reference is not called nondeterministic.
  const auto c = run_case("stateful-f32", model("stateful"), "float32[10,16]", "cpu");
  EXPECT_EQ(c["status"], "pass") << c.dump();
  EXPECT_FALSE(c["nondeterministic"].get<bool>());
}

// x.mul_(2); return x: the reference output was the input itself, doubled again by the re-run,
// and a target 25% off on all 512 elements passed as "float32 is the fragile side".
TEST_F(OwnedModels, AnOutputThatIsTheInputIsOwnedBeforeAnythingReruns) {
  for (const char* target : {"cpu:bfloat16", "cpu:float16"}) {
    const auto c = run_case(std::string("aliasing-") + target, model("aliasing"), "float32[8,64]", target);
    EXPECT_EQ(c["status"], "mismatch") << target << ": " << c.dump();
    EXPECT_EQ(c["attribution"], "target") << target;
    EXPECT_GT((*output_named(c, "out"))["mismatches"].get<int>(), 400) << target;  // all but those near zero
  }
  EXPECT_EQ(run_case("aliasing-f32", model("aliasing"), "float32[8,64]", "cpu")["status"], "pass");
}

// The same output plus a Python int count that is off by one on the target: a float64 scalar under
// the float tolerance let 81 pass for 80.
TEST_F(OwnedModels, AnIntOutputIsComparedExactly) {
  for (const char* target : {"cpu:bfloat16", "cpu:float16"}) {
    const auto c = run_case(std::string("int-") + target, model("int_count"), "float32[16,10]", target);
    EXPECT_EQ(c["outputs"].size(), 2u) << c.dump();
    EXPECT_EQ(c["status"], "mismatch") << target << ": " << c.dump();
    const auto* n = output_named(c, "out.1");
    ASSERT_NE(n, nullptr) << c.dump();
    EXPECT_EQ((*n)["rule"], "exact");
    EXPECT_EQ((*n)["reference_dtype"], "int64");
    EXPECT_FALSE((*n)["ok"].get<bool>());
    EXPECT_EQ((*n)["target_value"].get<double>() - (*n)["reference_value"].get<double>(), 1.0);
    ASSERT_NE(output_named(c, "out.0"), nullptr);
    EXPECT_TRUE((*output_named(c, "out.0"))["ok"].get<bool>());
  }
  EXPECT_EQ(run_case("int-f32", model("int_count"), "float32[16,10]", "cpu")["status"], "pass");
}

// A str label flipped on the target was dropped, so the case passed; a bool is exact.
TEST_F(OwnedModels, AStringOutputIsComparedByEquality) {
  const auto c = run_case("label", model("label"), "float32[4,4]", "cpu:bfloat16");
  EXPECT_EQ(c["status"], "mismatch") << c.dump();
  EXPECT_NE(message(c).find("out.1"), std::string::npos) << message(c);
  ASSERT_NE(output_named(c, "out.1"), nullptr) << c.dump();
  EXPECT_FALSE((*output_named(c, "out.1"))["ok"].get<bool>());
  ASSERT_NE(output_named(c, "out.2"), nullptr) << c.dump();
  EXPECT_EQ((*output_named(c, "out.2"))["reference_dtype"], "bool");
  EXPECT_EQ(run_case("label-f32", model("label"), "float32[4,4]", "cpu")["status"], "pass");
}

TEST_F(OwnedModels, ACaseThatComparesNothingIsAnError) {
  const auto c = run_case("no-outputs", model("no_outputs"), "float32[4,4]", "cpu");
  EXPECT_EQ(c["status"], "error") << c.dump();
  EXPECT_NE(message(c).find("no output to compare"), std::string::npos) << message(c);
}

TEST_F(OwnedModels, AnOutputOnlyTheTargetGivesIsAMismatchNamingIt) {
  const auto c = run_case("extra", model("extra_output"), "float32[4,4]", "cpu:bfloat16");
  EXPECT_EQ(c["status"], "mismatch") << c.dump();
  EXPECT_NE(message(c).find("out.1"), std::string::npos) << message(c);
  EXPECT_NE(message(c).find("the reference did not"), std::string::npos) << message(c);
}

// {"a": {"b.c": x}, "a.b": {"c": y}}: both were "out.a.b.c", and one hid the other.
TEST_F(OwnedModels, TwoOutputsWithOneNameAreRefusedByName) {
  const auto c = run_case("colliding", model("colliding"), "float32[4,4]", "cpu");
  EXPECT_EQ(c["status"], "error") << c.dump();
  EXPECT_NE(message(c).find("out.a.b.c"), std::string::npos) << message(c);
}

TEST_F(OwnedModels, ADictWithFloatKeysIsRefused) {
  const auto c = run_case("float-keys", model("float_keys"), "float32[4,4]", "cpu");
  EXPECT_EQ(c["status"], "error") << c.dump();
  EXPECT_NE(message(c).find("str or int keys"), std::string::npos) << message(c);
}

// x + randn_like(x): two fresh reference instances differ by ~1 where the tolerance is 1e-4.
// That was a tolerance widened to twice the spread; it is no reference at all.
TEST_F(OwnedModels, AReferenceThatDiffersFromItselfByFarMoreThanTheToleranceIsAnError) {
  const auto c = run_case("not-deterministic", model("not_deterministic"), "float32[8,8]", "cpu");
  EXPECT_EQ(c["status"], "error") << c.dump();
  EXPECT_NE(message(c).find("not deterministic"), std::string::npos) << message(c);
  EXPECT_EQ(c["phase"], "reference");
  EXPECT_EQ(c["atol"].get<double>(), 1e-4);
}

// net.pt replaced by another network between two runs with --reference-cache: the stale reference
// was used (here the float64 gold, run afresh, then excused the difference as "float32 is the
// fragile side"). The key holds the file's digest, the inputs and the mode.
TEST_F(OwnedModels, ASwappedModelFileDoesNotReuseTheCachedReference) {
  const std::string work = fresh_dir("owned-swap");
  const std::string cache = work + "/cache", net = work + "/net.pt";
  auto run = [&](const std::string& name, const std::string& input) {
    return run_case("swap-" + name, net, input, "cpu", {"--reference-cache", cache});
  };
  fs::copy_file(model("net_a"), net);
  const auto first = run("a", "float32[2,16]");
  EXPECT_EQ(first["status"], "pass") << first.dump();
  EXPECT_FALSE(first.value("reference_cached", false));
  const auto again = run("a-again", "float32[2,16]");
  EXPECT_EQ(again["status"], "pass") << again.dump();
  EXPECT_TRUE(again.value("reference_cached", false));  // the cache still works

  fs::copy_file(model("net_b"), net, fs::copy_options::overwrite_existing);
  const auto swapped = run("b", "float32[2,16]");
  EXPECT_EQ(swapped["status"], "pass") << swapped.dump();
  EXPECT_FALSE(swapped.value("reference_cached", false));
  EXPECT_EQ(swapped["message"], "");  // equal outright, no attribution needed
  EXPECT_EQ(swapped["attribution"], "");

  // Other inputs: another reference.
  const auto reshaped = run("b-inputs", "float32[3,16]");
  EXPECT_EQ(reshaped["status"], "pass") << reshaped.dump();
  EXPECT_FALSE(reshaped.value("reference_cached", false));
}

// The float64 gold of a --model case never returns: that was the target's `timeout`. It is
// mpscheck's own error, in the float64 phase.
TEST_F(OwnedModels, AModelWhoseFloat64RunHangsIsNotTheTargetsTimeout) {
  const auto c = run_case("gold-hang", model("gold_hang"), "float32[4,4]", "cpu:bfloat16", {"--timeout", "8"});
  EXPECT_EQ(c["status"], "error") << c.dump();
  EXPECT_EQ(c["phase"], "float64");
  EXPECT_NE(message(c).find("did not finish in its float64 phase"), std::string::npos) << message(c);
}

// Crashes and hangs outside the target's own run, through the real binary and the worker's phase
// lines: mpscheck's own error, saying which phase; only the target's crash stays a crash.
TEST(OwnedPhases, OnlyATargetPhaseCrashOrTimeoutIsTheTargets) {
  const std::string dir = fresh_dir("owned-phases");
  const auto r = run_mpscheck(
      {"--plugin-dir", fixtures_dir() + "/fixture_phases", "--no-default-plugins", "--filter", "^op/phases/",
       "--target", "cpu", "--quick", "--min-time", "0", "--timeout", "8", "--json", "r.json"},
      dir);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out << r.err;
  const auto cases = cases_by_id(read_json_file(dir + "/r.json"));
  ASSERT_EQ(cases.size(), 8u) << r.out;

  for (const auto& [id, phase] :
       std::vector<std::pair<std::string, std::string>>{{"op/phases/reference_segfault", "reference"},
                                                        {"op/phases/gold_segfault", "float64"},
                                                        {"op/phases/gold_hang", "float64"}}) {
    const auto& c = cases.at(id);
    EXPECT_EQ(c["status"], "error") << id << ": " << c.dump();
    EXPECT_EQ(c["phase"], phase) << id;
    EXPECT_NE(message(c).find("mpscheck's own run"), std::string::npos) << message(c);
    EXPECT_NE(message(c).find("its " + phase + " phase"), std::string::npos) << message(c);
  }
  EXPECT_EQ(cases.at("op/phases/reference_segfault")["signal"], "SIGSEGV");
  EXPECT_NE(message(cases.at("op/phases/gold_hang")).find("did not finish"), std::string::npos);

  const auto& target = cases.at("op/phases/target_segfault");
  EXPECT_EQ(target["status"], "crash") << target.dump();
  EXPECT_EQ(target["phase"], "target");

  // A reference failure that does not say the CPU lacks the op is the case's error, not a skip.
  const auto& lacks = cases.at("op/phases/reference_lacks_op");
  EXPECT_EQ(lacks["status"], "error") << lacks.dump();
  EXPECT_EQ(lacks["phase"], "reference");
  EXPECT_EQ(cases.at("op/phases/reference_cpu_lacks_op")["status"], "skip");

  // The op SDK's exposure: an output that is the instance's input, doubled in place.
  const auto& aliased = cases.at("op/phases/aliased_input");
  EXPECT_EQ(aliased["status"], "mismatch") << aliased.dump();
  EXPECT_EQ(aliased["attribution"], "target");

  const auto& dup = cases.at("op/phases/duplicate_names");
  EXPECT_EQ(dup["status"], "error") << dup.dump();
  EXPECT_NE(message(dup).find("two outputs named out"), std::string::npos) << message(dup);
}
