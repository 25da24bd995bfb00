// The device path, run on the test-only sim device (plugins/sim): the accelerator probe and its
// exit 3, `env`, timing with synchronisation, crash and hang isolation, TorchScript models,
// training and localisation, Python reproducers and bug reports all go through --target sim.
#include "sim_common.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace mpscheck::testing;
namespace fs = std::filesystem;

namespace {

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST(SimProbe, AllocationFailureStopsTheRunWithExit3AndOneLine) {
  const std::string dir = fresh_dir("sim-probe-oom");
  const auto r = run_mpscheck(on_sim({"--filter", "op/shape/cat/f32/contiguous/forward", "--min-time", "0"}), dir,
                              {"MPSCHECK_SIM_BUGS=oom-small"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  // The header line, then exactly one line: the device's own error, quoted.
  const auto err = split_lines(r.err);
  ASSERT_FALSE(err.empty());
  EXPECT_EQ(lines(r.err.substr(r.err.find("\nmpscheck: target") + 1)), 1) << r.err;
  EXPECT_NE(err.back().find("target 'sim' is present but unusable"), std::string::npos) << r.err;
  EXPECT_NE(err.back().find("sim backend out of memory"), std::string::npos) << r.err;
  // No case ran: nothing in the journal, no report.
  EXPECT_EQ(read_text_file(dir + "/mpscheck-report/journal.jsonl").find("\"id\""), std::string::npos);
  EXPECT_FALSE(fs::exists(dir + "/mpscheck-report/report.json"));
}

TEST(SimProbe, ADeviceThatHangsStopsTheRunAtTheDeadline) {
  const std::string dir = fresh_dir("sim-probe-hang");
  const auto r =
      run_mpscheck(on_sim({"--filter", "op/shape/cat/f32/contiguous/forward", "--min-time", "0", "--timeout", "3"}),
                   dir, {"MPSCHECK_SIM_BUGS=sync-hang"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("present but unusable: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no answer within 3 s"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/mpscheck-report/report.json"));
}

TEST(SimEnv, ShowsTheProbedState) {
  const std::string dir = fresh_dir("sim-env");
  const auto bad = run_mpscheck({"env", "--plugin-dir", sim_plugin_dir()}, dir, {"MPSCHECK_SIM_BUGS=oom-small"});
  EXPECT_EQ(bad.exit_code, 0) << bad.err;
  EXPECT_NE(bad.out.find("sim: present but unusable (sim backend out of memory"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("mps: not available"), std::string::npos) << bad.out;
  const auto good = run_mpscheck({"env", "--plugin-dir", sim_plugin_dir()}, dir);
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.out.find("sim: available, the probe passed"), std::string::npos) << good.out;
  const auto devices = good.out.substr(good.out.find("available_devices"));
  EXPECT_NE(devices.substr(0, devices.find('\n')).find("\"sim\""), std::string::npos) << good.out;
}

TEST(SimTarget, ADeviceNoPluginRegisteredIsExit3ListingWhatExists) {
  const std::string dir = fresh_dir("sim-target-missing");
  const auto r = run_mpscheck({"--filter", "op/shape/cat/f32/contiguous/forward", "--target", "sim"}, dir);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("target 'sim' is not available here"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("available targets: cpu"), std::string::npos) << r.err;
  const auto sim = run_mpscheck(
      {"--filter", "op/shape/cat/f32/contiguous/forward", "--target", "tpu", "--plugin-dir", sim_plugin_dir()}, dir);
  EXPECT_EQ(sim.exit_code, 3) << sim.err;
  EXPECT_NE(sim.err.find("available targets: cpu, sim"), std::string::npos) << sim.err;
}

// Ops and models of every kind on a clean sim device, timed: all pass, and every case --quick's plan
// times (the models, one contiguous forward per op and dtype) was timed on both sides through the
// device's synchronize; the rest got their verdict only.
TEST(SimRun, CleanDevicePassesAndTimesEveryPlannedCase) {
  const std::string dir = fresh_dir("sim-clean");
  const auto r = run_mpscheck(
      on_sim({"--filter",
              "op/(conv/conv2d|activation/gelu|linalg/linear|softmax/softmax|indexing/index_select|"
              "random/dropout|norm/layer_norm/f32|pool/max_pool2d|fft/stft)|model/(mlp|mnist_cnn|lenet5)/",
              // CPU float16/bfloat16 kernels that expectations/sim-libtorch-2.13.expect lists (issue 22).
              "--filter", "-op/softmax/softmax_(dim0|masked)/(bf16|f16)/.*/backward", "--min-time", "0.01"}),
      dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  EXPECT_EQ(count_findings(report), 0);
  int timed = 0, models = 0;
  for (const auto& c : report.at("cases")) {
    if (c.at("status") != "pass" || !c.at("timed").get<bool>()) continue;
    ASSERT_TRUE(c.contains("target_time") && !c.at("target_time").is_null()) << c.at("id");
    EXPECT_GT(c.at("target_time").at("runs").get<int>(), 0) << c.at("id");
    models += c.at("id").get<std::string>().rfind("model/", 0) == 0;
    ++timed;
  }
  EXPECT_EQ(models, 6) << "every model case is timed";
  EXPECT_GE(timed, 20);
  EXPECT_EQ(report["run"]["timed"], timed);
}

// The whole catalog, models included, on a clean sim device: nothing but the known list
// (expectations/sim-libtorch-2.13.expect), and nothing on that list passes unexpectedly.
TEST(SimRun, WholeCatalogOnACleanDeviceHasOnlyKnownFindings) {
  const std::string dir = fresh_dir("sim-all");
  const auto r = run_mpscheck(on_sim({"--all", "--min-time", "0", "--expect", sim_expectations()}), dir);
  EXPECT_EQ(r.exit_code, 0) << r.out.substr(r.out.size() > 3000 ? r.out.size() - 3000 : 0);
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  EXPECT_GT(report.at("cases").size(), 5000u);
}

TEST(SimRun, ReducedPrecisionTargetsWorkLikeMps) {
  for (const char* target : {"sim:float16", "sim:bfloat16"}) {
    const std::string dir = fresh_dir(std::string("sim-reduced-") + (target + 4));
    const auto r = run_mpscheck(
        on_sim({"--filter", "op/activation/(gelu|relu)/f32/|model/mlp/", "--target", target, "--min-time", "0"}), dir);
    EXPECT_EQ(r.exit_code, 0) << target << r.err;
    const auto report = read_json_file(dir + "/mpscheck-report/report.json");
    for (const auto& c : report.at("cases")) {
      EXPECT_EQ(c.at("target"), target);
      EXPECT_EQ(c.at("status"), "pass") << c.at("id") << c.value("message", "");
    }
  }
}

// A kernel that aborts and one that hangs cost one case each; a fresh worker carries on.
TEST(SimIsolation, AnAbortAndAHangCostOneCaseEach) {
  const std::string dir = fresh_dir("sim-isolation");
  const auto r = run_mpscheck(on_sim({"--filter",
                                      "op/activation/logit/f32/contiguous/forward|op/binary/logaddexp/f32/"
                                      "contiguous/forward|op/shape/cat/f32/contiguous/forward",
                                      "--timeout", "5", "--min-time", "0"}),
                              dir, {"MPSCHECK_SIM_BUGS=abort,hang"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto cases = cases_by_id(read_json_file(dir + "/mpscheck-report/report.json"));
  const auto& logit = cases.at("op/activation/logit/f32/contiguous/forward");
  EXPECT_EQ(logit.at("status"), "crash");
  EXPECT_EQ(logit.at("signal"), "SIGABRT");
  EXPECT_NE(logit.at("message").get<std::string>().find("kernel assertion"), std::string::npos);
  EXPECT_EQ(cases.at("op/binary/logaddexp/f32/contiguous/forward").at("status"), "timeout");
  EXPECT_EQ(cases.at("op/shape/cat/f32/contiguous/forward").at("status"), "pass");
}

TEST(SimErrors, AnErrorQueuedOnTheDeviceSurfacesAtSynchronize) {
  const std::string dir = fresh_dir("sim-sync-error");
  const auto r = run_mpscheck(on_sim({"--filter", "op/binary/(hypot|add)/f32/contiguous/forward", "--min-time", "0"}),
                              dir, {"MPSCHECK_SIM_BUGS=sync-error"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto cases = cases_by_id(read_json_file(dir + "/mpscheck-report/report.json"));
  const auto& hypot = cases.at("op/binary/hypot/f32/contiguous/forward");
  EXPECT_EQ(hypot.at("status"), "error");
  EXPECT_NE(hypot.at("message").get<std::string>().find("command buffer exited with error status"), std::string::npos);
  // Raised once: the next case on the same worker is clean.
  EXPECT_EQ(cases.at("op/binary/add/f32/contiguous/forward").at("status"), "pass");
}

// Training models on sim, and localisation: a wrong Linear (forward) names the layer; a wrong ReLU
// backward names a parameter gradient.
TEST(SimModels, PlantedBugsAreLocalisedToALayer) {
  {
    const std::string dir = fresh_dir("sim-localise-forward");
    const auto r =
        run_mpscheck(on_sim({"--filter", "model/mlp/", "--min-time", "0"}), dir, {"MPSCHECK_SIM_BUGS=size-threshold"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    int named = 0;
    const auto report = read_json_file(dir + "/mpscheck-report/report.json");
    for (const auto& c : report.at("cases")) {
      EXPECT_EQ(c.at("status"), "mismatch") << c.at("id");
      named += !layer_of(c).empty();
    }
    EXPECT_GE(named, 1);
  }
  {
    const std::string dir = fresh_dir("sim-localise-backward");
    const auto r =
        run_mpscheck(on_sim({"--filter", "model/mlp/train", "--min-time", "0"}), dir, {"MPSCHECK_SIM_BUGS=backward"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const auto report = read_json_file(dir + "/mpscheck-report/report.json");
    for (const auto& c : report.at("cases"))
      EXPECT_EQ(layer_of(c).rfind("backward/", 0), 0u) << c.dump().substr(0, 600);
  }
}

TEST(SimModels, TorchScriptModelTrainsOnSim) {
  const std::string dir = fresh_dir("sim-torchscript");
  if (run_shell("python3 -c 'import torch'", dir).exit_code != 0)
    FAIL() << "python3 with torch is not installed: scripts/install-deps.sh installs it (the test tools are part of "
              "the suite; a missing one fails rather than skipping, so ctest never counts it as a pass)";
  // TorchScript needs the model's source in a file.
  std::ofstream(dir + "/net.py") << "import torch\n"
                                    "class Net(torch.nn.Module):\n"
                                    "    def __init__(self):\n"
                                    "        super().__init__()\n"
                                    "        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)\n"
                                    "        self.fc = torch.nn.Linear(8 * 8 * 8, 10)\n"
                                    "    def forward(self, x):\n"
                                    "        return self.fc(torch.relu(self.conv(x)).flatten(1)).softmax(-1)\n"
                                    "torch.manual_seed(0)\n"
                                    "torch.jit.script(Net()).save('net.pt')\n";
  const auto exported = run_shell("python3 net.py", dir);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const auto r = run_mpscheck(
      on_sim({"--model", dir + "/net.pt", "--input", "float32[2,3,8,8]", "--train", "--min-time", "0.01"}), dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  ASSERT_GE(report.at("cases").size(), 1u);
  for (const auto& c : report.at("cases")) {
    EXPECT_EQ(c.at("status"), "pass") << c.value("message", "");
    EXPECT_EQ(c.at("target"), "sim");
  }
}

// For sim, the reproducer differs from the CPU one in its device line only.
TEST(SimRepro, ScriptDiffersOnlyInTheDeviceLine) {
  const std::string dir = fresh_dir("sim-repro");
  const std::string id = "op/activation/gelu/f32/transposed/backward";
  const auto sim = run_mpscheck({"repro", id, "--target", "sim", "--script", "--plugin-dir", sim_plugin_dir()}, dir);
  const auto cpu = run_mpscheck({"repro", id, "--target", "cpu", "--script"}, dir);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const auto a = split_lines(sim.out), b = split_lines(cpu.out);
  ASSERT_EQ(a.size(), b.size());
  std::vector<std::string> differ;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) differ.push_back(a[i]);
  EXPECT_EQ(differ, std::vector<std::string>{"DEVICE = \"sim\""});
}

TEST(SimReports, BugReportsNameTheSimDeviceAndCarryAReproducer) {
  const std::string dir = fresh_dir("sim-bug-reports");
  const auto r = run_mpscheck(on_sim({"--filter", "op/activation/gelu/f32/(transposed|contiguous)/forward",
                                      "--min-time", "0", "--bug-reports", "bugs"}),
                              dir, {"MPSCHECK_SIM_BUGS=transposed"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  int reports = 0;
  for (const auto& f : fs::directory_iterator(dir + "/bugs")) {
    const std::string text = read_text_file(f.path().string());
    if (f.path().filename() == "fingerprints.md") {  // the index of the reports by fingerprint
      EXPECT_NE(text.find("op/activation/gelu/f32/transposed/forward"), std::string::npos) << text;
      continue;
    }
    EXPECT_NE(text.find("transposed"), std::string::npos);
    EXPECT_NE(text.find("DEVICE = \"sim\""), std::string::npos);
    EXPECT_NE(text.find("first at ["), std::string::npos);
    ++reports;
  }
  EXPECT_EQ(reports, 1);  // the contiguous case is right
}

// A model finding localised to one module gets an op-level reproducer in its bug report, aimed at
// the device the run used, with the layer's tensors saved beside it (a zip torch.load reads).
TEST(SimReports, ALocalisedModelFindingCarriesItsLayersOpLevelReproducer) {
  const std::string dir = fresh_dir("sim-layer-bug-reports");
  const auto r = run_mpscheck(on_sim({"--filter", "model/mlp/", "--min-time", "0", "--bug-reports", "bugs"}), dir,
                              {"MPSCHECK_SIM_BUGS=size-threshold"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  int scripts = 0;
  const auto report = read_json_file(dir + "/mpscheck-report/report.json");
  for (const auto& c : report.at("cases")) {
    const std::string layer = layer_of(c);
    if (layer.empty() || layer.rfind("backward/", 0) == 0) continue;
    std::string file = c.at("id").get<std::string>();
    std::replace(file.begin(), file.end(), '/', '_');
    const std::string base = dir + "/bugs/" + file;
    const std::string issue = read_text_file(base + ".md");
    EXPECT_NE(issue.find("This op-level reproducer runs that layer's op alone"), std::string::npos)
        << issue.substr(0, 2000);
    EXPECT_NE(issue.find("DEVICE = \"sim\""), std::string::npos);
    EXPECT_NE(issue.find("LAYER = \"" + layer + "\""), std::string::npos);
    EXPECT_NE(issue.find("torch.nn.functional.linear(x, weight, bias)"), std::string::npos);
    EXPECT_EQ(read_text_file(base + ".layer.pt").substr(0, 2), "PK");
    ++scripts;
  }
  EXPECT_GE(scripts, 1);
}
