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

namespace {
// Sets GTEST_SHARD_* for one test, as a sharded test runner would around an mpscheck it starts.
struct GtestShardEnv {
  GtestShardEnv(const char* index, const char* total) {
    setenv("GTEST_SHARD_INDEX", index, 1);
    setenv("GTEST_TOTAL_SHARDS", total, 1);
  }
  ~GtestShardEnv() {
    unsetenv("GTEST_SHARD_INDEX");
    unsetenv("GTEST_TOTAL_SHARDS");
  }
};
}  // namespace

TEST(Cli, GtestShardVariablesAreIgnoredUnlessShardAuto) {
  GtestShardEnv env("1", "3");
  const auto plain = parse({"--ops"});
  EXPECT_TRUE(plain.shard.empty());
  EXPECT_NE(plain.shard_note.find("ignored"), std::string::npos) << plain.shard_note;
  const auto automatic = parse({"--ops", "--shard", "auto"});
  EXPECT_EQ(automatic.shard, "2/3");
  const auto explicit_shard = parse({"--ops", "--shard", "1/2"});
  EXPECT_EQ(explicit_shard.shard, "1/2");
}

TEST(Cli, ShardAutoWithoutVariablesRunsEverythingAndSaysSo) {
  unsetenv("GTEST_SHARD_INDEX");
  unsetenv("GTEST_TOTAL_SHARDS");
  const auto c = parse({"--ops", "--shard", "auto"});
  EXPECT_TRUE(c.shard.empty());
  EXPECT_NE(c.shard_note.find("every case"), std::string::npos) << c.shard_note;
}

TEST(Cli, ShardAutoWithGarbageVariablesIsBadUsage) {
  GtestShardEnv env("x", "99999999999999999999");
  EXPECT_THROW(parse({"--ops", "--shard", "auto"}), UsageError);
  EXPECT_NO_THROW(parse({"--ops"}));  // not asked for: not read
}
