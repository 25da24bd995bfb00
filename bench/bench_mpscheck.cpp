// Benchmarks behind the claims in the README, printed as ratios measured in one run:
//  (a) mpscheck's reported reference median vs a minimal hand-written LibTorch loop of the same work
//  (b) per-case overhead of the worker protocol and the comparison, as a fraction of case time
//  (c) comparison throughput vs a plain memory copy
#include "checks/compare.hpp"
#include "checks/timing.hpp"
#include "core/execute.hpp"
#include "core/plugin_host.hpp"
#include "core/registry.hpp"
#include "reports/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>

using namespace mpscheck;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Median of per-iteration times over blocks of the plain loop, about `budget` seconds in all.
double hand_median(const std::function<void()>& work, double budget) {
  for (int i = 0; i < 5; ++i) work();
  auto t0 = Clock::now();
  work();
  const double once = std::max(seconds(t0), 1e-7);
  const int block = std::max(1, static_cast<int>(budget / 20 / once));
  std::vector<double> samples;
  const auto start = Clock::now();
  while (samples.size() < 5 || seconds(start) < budget) {
    t0 = Clock::now();
    for (int i = 0; i < block; ++i) work();
    samples.push_back(seconds(t0) / block);
    if (samples.size() > 500) break;
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

at::Generator gen(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

}  // namespace

int main() {
  PluginHost host;
  host.load_directory(MPSCHECK_PLUGINS_DIR);
  const Registry registry(host.workloads());
  ExecuteOptions options;
  options.target = parse_target("cpu");
  options.min_time_s = 1.0;

  // (a) Hand-written loops: the same shapes and the same values as the cases (drawn from a seed-0
  // generator in the cases' order and distribution: softmax's logits span -100..100, and the
  // underflowing exponentials make it several times slower than on unit-range inputs).
  struct Pair {
    const char* id;
    std::function<void()> hand;
  };
  auto g = gen(0);
  const at::Tensor lx = at::randn({32, 64}, g), lw = at::randn({48, 64}, g), lb = at::randn({48}, g);
  auto gc = gen(0);
  const at::Tensor cx = at::randn({2, 8, 16, 16}, gc), cw = at::randn({16, 8, 3, 3}, gc), cb = at::randn({16}, gc);
  auto gs = gen(0);
  const at::Tensor sx = at::rand({32, 100}, gs) * 200 - 100;
  std::vector<Pair> pairs{
      {"op/linalg/linear/f32/contiguous/forward", [&] { at::NoGradGuard ng; (void)at::linear(lx, lw, lb); }},
      {"op/conv/conv2d/f32/contiguous/forward", [&] { at::NoGradGuard ng; (void)at::conv2d(cx, cw, cb, {1, 1}, {1, 1}); }},
      {"op/softmax/softmax/f32/contiguous/forward", [&] { at::NoGradGuard ng; (void)at::softmax(sx, -1); }},
  };
  // Models: the loop calls the network's own forward (no mpscheck machinery around it).
  for (const char* id : {"model/mlp/infer", "model/mnist_cnn/infer"}) {
    const RegisteredWorkload* w = registry.find(id);
    if (!w) continue;
    auto inst = std::shared_ptr<Instance>(w->workload->instantiate(Setup{}, Placement{}));
    pairs.push_back({id, [inst] { inst->iterate(); }});
  }
  // Three alternating rounds per case (mpscheck, loop, mpscheck, ...): drift hits both alike.
  constexpr int kRounds = 3;
  std::cout << "(a) reported reference median vs a hand-written loop (goal: within +-3%; medians of " << kRounds
            << " alternating rounds)\n";
  std::cout << fmt::format("  {:<44} {:>12} {:>12} {:>8}\n", "case", "mpscheck", "hand loop", "ratio");
  auto median = [](const std::vector<double>& v) { return summarize_times(v).median_s; };
  for (const auto& p : pairs) {
    const RegisteredWorkload* w = registry.find(p.id);
    if (!w) {
      std::cout << "  " << p.id << ": not loaded\n";
      continue;
    }
    std::vector<double> tool, hand;
    for (int round = 0; round < kRounds; ++round) {
      const CaseResult r = execute_case(*w, options);
      if (!r.reference_time) break;
      tool.push_back(r.reference_time->median_s);
      hand.push_back(hand_median(p.hand, 1.0));
    }
    if (tool.empty()) {
      std::cout << "  " << p.id << ": not timed\n";
      continue;
    }
    std::cout << fmt::format("  {:<44} {:>9.2f} us {:>9.2f} us {:>8.3f}\n", p.id, median(tool) * 1e6,
                             median(hand) * 1e6, median(tool) / median(hand));
  }

  // (b) Overhead: the host's wall time per case vs the time spent computing inside the worker.
  const std::string dir = (std::filesystem::temp_directory_path() / "mpscheck-bench").string();
  std::filesystem::create_directories(dir);
  const std::string cmd = fmt::format(
      "cd '{}' && '{}' --filter 'model/(mlp|mnist_cnn)/|op/(linalg/linear|conv/conv2d|softmax/softmax)/f32/contiguous' "
      "--target cpu --quick --min-time 0.2 --json bench.json > /dev/null 2>&1",
      dir, MPSCHECK_BINARY);
  const int rc = std::system(cmd.c_str());
  std::cout << "\n(b) per-case overhead of the worker protocol and the comparison (goal: < 5% for model cases)\n";
  try {
    const RunReport report = read_json_report(dir + "/bench.json");
    std::cout << fmt::format("  {:<44} {:>9} {:>9} {:>9} {:>9}\n", "case", "wall s", "worker s", "compare s", "overhead");
    std::vector<double> model_overheads;
    for (size_t i = 0; i < report.cases.size(); ++i) {
      const auto& c = report.cases[i];
      // The first case also pays for starting the worker (process, LibTorch, plugins): once per
      // run and after a crash, not per case, so it is shown apart.
      double host = c.wall_s - c.worker_s;
      if (i == 0) {
        std::cout << fmt::format("  worker start-up (once per run, paid by the first case): {:.3f} s\n", host);
        host = 0;
      }
      const double overhead = (host + c.compare_s) / c.wall_s;
      if (c.kind == "model") model_overheads.push_back(overhead);
      std::cout << fmt::format("  {:<44} {:>9.3f} {:>9.3f} {:>9.4f} {:>8.2f}%{}\n", c.id, c.wall_s, c.worker_s, c.compare_s,
                               100 * overhead, i == 0 ? " (start-up left out)" : "");
    }
    if (!model_overheads.empty())
      std::cout << fmt::format("  model cases: median overhead {:.2f}%, worst {:.2f}%\n", 100 * median(model_overheads),
                               100 * *std::max_element(model_overheads.begin(), model_overheads.end()));
  } catch (const std::exception& e) {
    std::cout << "  the run failed (exit " << rc << "): " << e.what() << '\n';
  }

  // (c) Comparison throughput vs a memory copy of the same data.
  const int64_t n = 16 << 20;  // 64 MiB of float32 per tensor
  const at::Tensor a = at::randn({n}, g), b = a + 1e-7;
  at::Tensor dst = at::empty_like(a);
  const double bytes = 2.0 * n * sizeof(float);
  const double copy_s = hand_median([&] { dst.copy_(a); }, 1.0);
  const double cmp_s = hand_median([&] { compare_tensors("out", a, b, Tolerance{1.3e-6, 1e-5}); }, 2.0);
  std::cout << "\n(c) comparison throughput (two 64 MiB float32 tensors)\n";
  std::cout << fmt::format("  compare_tensors {:8.2f} GB/s\n  memory copy     {:8.2f} GB/s\n  ratio           {:8.3f}\n",
                           bytes / cmp_s / 1e9, bytes / copy_s / 1e9, copy_s / cmp_s);
  return 0;
}
