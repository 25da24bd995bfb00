#include "core/config.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace mpscheck;

namespace {
Config parse(std::vector<const char*> args) {
  args.insert(args.begin(), "mpscheck");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}
}  // namespace

TEST(Cli, AllSelectsOpsAndModels) {
  const auto c = parse({"--all"});
  EXPECT_TRUE(c.selection.ops);
  EXPECT_TRUE(c.selection.models);
  EXPECT_EQ(c.command, Command::Run);
  EXPECT_EQ(c.target.device, "auto");
}

TEST(Cli, FiltersAccumulateAndNegate) {
  const auto c = parse({"--filter", "conv", "--filter", "-backward"});
  ASSERT_EQ(c.selection.filters.size(), 2u);
  CaseFilter f(c.selection.filters);
  EXPECT_TRUE(f.matches("op/conv/conv2d/f32/contiguous/forward"));
  EXPECT_FALSE(f.matches("op/conv/conv2d/f32/contiguous/backward"));
  EXPECT_FALSE(f.matches("op/pool/max_pool2d/f32/contiguous/forward"));
}

TEST(Cli, OnlyNegativeFilterKeepsEverythingElse) {
  CaseFilter f({"-faults"});
  EXPECT_TRUE(f.matches("model/mlp/train"));
  EXPECT_FALSE(f.matches("op/faults/hang"));
}

TEST(Cli, TargetWithDtype) {
  const auto c = parse({"--ops", "--target", "cpu:bfloat16"});
  EXPECT_EQ(c.target.device, "cpu");
  ASSERT_TRUE(c.target.dtype.has_value());
  EXPECT_EQ(*c.target.dtype, c10::kBFloat16);
  EXPECT_EQ(c.target.str(), "cpu:bfloat16");
  EXPECT_EQ(parse({"--ops", "--target", "mps:float16"}).target.str(), "mps:float16");
  EXPECT_EQ(parse({"--ops", "--target", "cuda:1"}).target.str(), "cuda:1");
}

TEST(Cli, QuickShrinksBudgetsAndSkipsLargeCases) {
  const auto c = parse({"--all", "--quick"});
  EXPECT_DOUBLE_EQ(c.min_time(), 0.02);
  EXPECT_TRUE(c.selection.skip_large);
  EXPECT_DOUBLE_EQ(parse({"--all"}).min_time(), 0.2);
  EXPECT_DOUBLE_EQ(parse({"--all", "--min-time", "0"}).min_time(), 0.0);
}

TEST(Cli, TimeoutDefaultsDependOnKind) {
  const auto c = parse({"--all"});
  EXPECT_GT(c.timeout_for_model(), c.timeout_for_op());
  EXPECT_DOUBLE_EQ(parse({"--all", "--timeout", "7"}).timeout_for_model(), 7);
}

TEST(Cli, ListAndSubcommands) {
  EXPECT_EQ(parse({"--list", "--ops"}).command, Command::List);
  EXPECT_EQ(parse({"env"}).command, Command::Env);
  const auto r = parse({"repro", "op/conv/conv2d/f32/contiguous/forward", "--target", "cpu"});
  EXPECT_EQ(r.command, Command::Repro);
  EXPECT_EQ(r.arguments.at(0), "op/conv/conv2d/f32/contiguous/forward");
}

TEST(Cli, BadInputIsAUsageError) {
  EXPECT_THROW(parse({"--all", "--bogus"}), UsageError);
  EXPECT_THROW(parse({"--all", "--target", "TPU"}), UsageError);
  EXPECT_THROW(parse({"--all", "--target", "cpu:int8"}), UsageError);
  EXPECT_THROW(parse({"--all", "--timeout", "0"}), UsageError);
  EXPECT_THROW(parse({"--all", "--timeout", "abc"}), UsageError);
  EXPECT_THROW(parse({"--filter", "("}), UsageError);
  EXPECT_THROW(parse({}), UsageError);  // nothing selected
  EXPECT_THROW(parse({"frobnicate"}), UsageError);
  EXPECT_THROW(parse({"repro"}), UsageError);
}

TEST(Cli, UsageErrorsSayWhatToDo) {
  try {
    parse({"--all", "--target", "TPU"});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("use auto, cpu, mps or cuda"), std::string::npos) << e.what();
  }
}

TEST(Cli, HelpCarriesItsText) {
  std::string text;
  std::vector<const char*> args{"mpscheck", "--help"};
  const auto c = parse_command_line(2, args.data(), &text);
  EXPECT_EQ(c.command, Command::Help);
  EXPECT_NE(text.find("--target"), std::string::npos);
}
