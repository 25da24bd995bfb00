// The run's plan (which cases are timed), the jobs defaults, and the worker's typed config.
#include "core/run_loop.hpp"
#include "core/run_plan.hpp"
#include "core/worker_protocol.hpp"

#include <gtest/gtest.h>

#include <thread>

using namespace mpscheck;

namespace {
std::vector<bool> plan(const std::vector<std::string>& ids, bool quick, double min_time = 0.02) {
  std::vector<bool> is_model;
  for (const auto& id : ids) is_model.push_back(id.rfind("model/", 0) == 0);
  return plan_timing(ids, is_model, quick, min_time);
}
}  // namespace

TEST(RunPlan, ParsesOpIdsOfFiveOrSixParts) {
  OpIdParts p;
  ASSERT_TRUE(parse_op_id("op/activation/gelu/f32/sliced/backward", &p));
  EXPECT_EQ(p.family, "activation");
  EXPECT_EQ(p.op, "gelu");
  EXPECT_EQ(p.dtype, "f32");
  EXPECT_EQ(p.variant, "sliced");
  EXPECT_EQ(p.direction, "backward");
  ASSERT_TRUE(parse_op_id("op/random/bernoulli/f32/contiguous", &p));
  EXPECT_EQ(p.direction, "");
  EXPECT_FALSE(parse_op_id("op/faults/slow", &p));
  EXPECT_FALSE(parse_op_id("model/mlp/train", &p));
  EXPECT_FALSE(parse_op_id("op/a//f32/contiguous", &p));
  EXPECT_FALSE(parse_op_id("op/a/b/c/d/e/f", &p));
}

TEST(RunPlan, WithoutQuickEveryCaseIsTimedAndWithNoBudgetNone) {
  const std::vector<std::string> ids{"op/a/x/f32/contiguous/forward", "op/a/x/f32/sliced/forward", "model/m/infer"};
  EXPECT_EQ(plan(ids, false), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(plan(ids, true, 0), (std::vector<bool>{false, false, false}));
  EXPECT_EQ(plan(ids, false, 0), (std::vector<bool>{false, false, false}));
}

TEST(RunPlan, QuickTimesOneContiguousForwardPerOpAndDtypeAndEveryModel) {
  const std::vector<std::string> ids{
      "model/mlp/infer",  // every model
      "model/mlp/train",
      "op/a/x/f32/contiguous/backward",  // x f32: the contiguous forward, not its backward
      "op/a/x/f32/contiguous/forward",
      "op/a/x/f32/sliced/forward",
      "op/a/x/f16/sliced/forward",  // x f16: no contiguous case, so the first forward
      "op/a/x/f16/transposed/backward",
      "op/a/x/f16/transposed/forward",
      "op/a/y/f32/channels_last/backward",  // y f32: backward only, so the first case
      "op/a/y/f32/sliced/backward",
      "op/r/bernoulli/f32/contiguous",  // no direction: a forward
      "op/faults/slow",                 // another scheme: timed on its own
  };
  EXPECT_EQ(plan(ids, true),
            (std::vector<bool>{true, true, false, true, false, true, false, false, true, false, true, true}));
}

TEST(RunPlan, OpInfoCasesAreVerdictsOnlyInEveryRun) {
  const std::vector<std::string> ids{"op/opinfo/addmm/f32/s0-addmm/forward", "op/opinfo/addmm/f16/s0-addmm/forward",
                                     "op/linalg/addmm/f32/contiguous/forward"};
  EXPECT_EQ(plan(ids, false), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(plan(ids, true), (std::vector<bool>{false, false, true}));
}

TEST(RunPlan, JobsDefaultToTheCoresOnCpuAndOneOnAnAccelerator) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(default_jobs(TargetSpec{"cpu", {}}), cores);
  EXPECT_EQ(default_jobs(TargetSpec{"mps", {}}), 1);
  EXPECT_EQ(default_jobs(TargetSpec{"sim", {}}), 1);
  EXPECT_EQ(verdict_threads_for(1, 0), 0);  // one job: LibTorch's default
  EXPECT_EQ(verdict_threads_for(4, 3), 3);  // --threads wins
  // As many jobs as cores: one thread each, so the workers do not oversubscribe the machine.
  EXPECT_EQ(verdict_threads_for(cores, 0), cores > 1 ? 1 : 0);
}

// A config whose target the host did not resolve, or whose dtype no target computes in, is the
// host's bug: the worker refuses it by name rather than run on a guess.
TEST(WorkerConfig, RefusesATargetThatIsNotResolvedOrHasNoTargetDtype) {
  WorkerConfig c;
  c.target.device = "cpu";
  nlohmann::json j = c;
  EXPECT_EQ(j["target"]["dtype"], "float32");
  EXPECT_FALSE(j.get<WorkerConfig>().target.dtype.has_value());  // float32 is no reduced dtype
  j["target"]["dtype"] = "f16";                                  // any spelling in the dtype table
  EXPECT_EQ(j.get<WorkerConfig>().target.dtype, c10::kHalf);
  for (const char* bad : {"int8", "complex7", ""}) {
    j["target"]["dtype"] = bad;
    try {
      (void)j.get<WorkerConfig>();
      ADD_FAILURE() << "dtype " << bad << " accepted";
    } catch (const ProtocolError& e) {
      EXPECT_NE(std::string(e.what()).find("not float32, float16 or bfloat16"), std::string::npos) << e.what();
    }
  }
  j["target"] = {{"device", "auto"}, {"dtype", "float32"}};
  EXPECT_THROW((void)j.get<WorkerConfig>(), ProtocolError);
  j["target"] = "cpu:bfloat16";  // the old text form
  EXPECT_ANY_THROW((void)j.get<WorkerConfig>());
}

TEST(WorkerConfig, RoundTripsThroughItsOneSerialiser) {
  WorkerConfig c;
  c.target = parse_target("sim:bfloat16");
  c.seed = 18446744073709551615ull;
  c.quick = true;
  c.min_time = 0.05;
  c.threads = 3;
  c.default_plugins = false;
  c.plugin_dirs = {"/a", "/b c"};
  c.model = "/m.pt";
  c.inputs = {"float32[1,3]", "int64[2]:0..9"};
  c.train = true;
  const WorkerConfig back = nlohmann::json::parse(nlohmann::json(c).dump()).get<WorkerConfig>();
  EXPECT_EQ(nlohmann::json(back), nlohmann::json(c));
  EXPECT_EQ(back.seed, c.seed);
  EXPECT_EQ(back.plugin_dirs, c.plugin_dirs);
  EXPECT_EQ(back.target.device, "sim");
  EXPECT_EQ(back.target.dtype, c10::kBFloat16);
  // The target travels typed: a device and a dtype name, nothing for the worker to parse.
  EXPECT_EQ(nlohmann::json(c)["target"], nlohmann::json({{"device", "sim"}, {"dtype", "bfloat16"}}));
  const CaseRequest r = nlohmann::json::parse(R"({"id":"op/x"})").get<CaseRequest>();
  EXPECT_TRUE(r.time);  // a request without the field is timed, as every case was before the plan
  EXPECT_FALSE(nlohmann::json(CaseRequest{"op/x", false}).get<CaseRequest>().time);
}
