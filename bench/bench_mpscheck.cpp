// Benchmarks behind the claims in docs/benchmarks.md, printed as ratios measured in one run:
//  (a) mpscheck's reported reference median vs a hand-written LibTorch loop of the same work
//  (b) each case's whole host cost (everything but the timed compute) vs its unpadded compute
//  (c) compare_tensors' throughput vs memcpy, for float32, float16 and bfloat16
//  (d) verdict throughput in cases per second, --jobs 1 and --jobs 2
//  (e) the reference cache: a second run with --reference-cache against the first
//  (f) per-op replay of model cases (issue 49): a --models run with it against one without
// The machine may be shared: each ratio's two sides are measured close together (alternating
// where it matters), so a busy neighbour moves both, but absolute figures move with the load.
#include "checks/compare.hpp"
#include "checks/timing.hpp"
#include "core/execute.hpp"
#include "core/plugin_host.hpp"
#include "core/registry.hpp"
#include "reports/report.hpp"

#include <torch/torch.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <thread>
#include <vector>

#include <sys/wait.h>

using namespace mpscheck;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Median of per-iteration times over blocks of the plain loop, about `budget` seconds in all.
// Written apart from mpscheck's timing (checks/timed_rounds.cpp): its own warm-up, block size and stop rule.
// Everything here runs on the CPU, whose kernels return when their work is done: the loop needs no
// device synchronisation of its own.
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

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// Median of single calls' thread CPU time, after two warm-up calls, about `budget` CPU seconds.
double cpu_median(const std::function<void()>& work, double budget) {
  work(), work();
  std::vector<double> samples;
  double spent = 0;
  while (samples.size() < 5 || (spent < budget && samples.size() < 200)) {
    const double t0 = thread_cpu_seconds();
    work();
    samples.push_back(thread_cpu_seconds() - t0);
    spent += samples.back();
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

at::Generator gen(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

// (a) The zoo's networks written again with plain torch::nn. Building them here, rather than
// taking the case's module out of its Instance, keeps the hand loop free of any mpscheck code:
// neither the plugin's forward nor Instance::iterate (the very function mpscheck times) runs in
// it. Seeding LibTorch's generator with the case's seed (Setup::seed, 0) and creating the same
// layers in the same order draws the same weights, and the inputs come from the same generator
// (seed + 7, model.hpp) in the same order; check_hand_networks() checks that the outputs agree bit
// for bit, so both loops do the same arithmetic on the same numbers.
struct HandMlp {
  torch::nn::Linear l0{nullptr}, l1{nullptr}, l2{nullptr};
  HandMlp() {
    torch::manual_seed(0);
    l0 = torch::nn::Linear(1024, 512), l1 = torch::nn::Linear(512, 256), l2 = torch::nn::Linear(256, 10);
  }
  at::Tensor forward(const at::Tensor& x) { return l2(torch::relu(l1(torch::relu(l0(x))))); }
  std::vector<at::Tensor> parameters() {
    std::vector<at::Tensor> p;
    for (auto* l : {&l0, &l1, &l2})
      for (auto& t : (*l)->parameters()) p.push_back(t);
    return p;
  }
};

struct HandMnistCnn {
  torch::nn::Conv2d c1{nullptr}, c2{nullptr};
  torch::nn::Linear f1{nullptr}, f2{nullptr};
  HandMnistCnn() {
    torch::manual_seed(0);
    c1 = torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 64, 3));
    c2 = torch::nn::Conv2d(torch::nn::Conv2dOptions(64, 512, 3));
    f1 = torch::nn::Linear(512, 1024), f2 = torch::nn::Linear(1024, 10);
  }
  // Inference: the Dropout2d is off in eval mode, so it is left out.
  at::Tensor forward(const at::Tensor& x0) {
    at::Tensor x = torch::max_pool2d(c1(x0), 2, 2);
    x = torch::max_pool2d(c2(x), 2, 2);
    x = std::get<0>(torch::adaptive_max_pool2d(x, {1, 1})).flatten(1);
    return f2(torch::relu(f1(x)));
  }
};

// The largest |a - b| between the case's own output and the hand network's (0: bit for bit).
double disagreement(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined() || a.sizes() != b.sizes()) return std::numeric_limits<double>::infinity();
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

at::Tensor output_named(const Outputs& outs, const std::string& name) {
  for (const auto& o : outs)
    if (o.name == name) return o.value;
  return {};
}

// Runs the mpscheck binary with `args` in `dir` (output discarded); the wall time in seconds, or
// a negative number when it failed to start or exited with a code above 1 (1 only means "some
// case did not pass").
double run_mpscheck(const std::string& dir, const std::string& args) {
  const std::string cmd = fmt::format("cd '{}' && '{}' {} > /dev/null 2>&1", dir, MPSCHECK_BINARY, args);
  const auto t0 = Clock::now();
  const int rc = std::system(cmd.c_str());
  const double s = seconds(t0);
  if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) > 1) return -1;
  return s;
}

// (a) Hand-written loops: the same shapes and the same values as the cases (drawn from a seed-0
// generator in the cases' order and distribution: softmax's logits span -100..100, and the
// underflowing exponentials make it several times slower than on unit-range inputs).
// `hand` makes the loop body over fresh copies of its inputs: each round of the case makes fresh
// instances, so each round of the loop allocates anew too, and where a buffer happened to land
// (worth 20% or more on a microsecond kernel) is drawn afresh on both sides.
struct Pair {
  std::string id;
  std::function<std::function<void()>()> hand;
};

// The inputs and networks of (a)'s hand loops. The loops hold references to these tensors, so the
// object stays where it was made.
struct HandLoops {
  at::Tensor lx, lw, lb, cx, cw, cb, sx, mlp_x, mnist_x;
  std::shared_ptr<HandMlp> mlp;
  std::shared_ptr<HandMnistCnn> cnn;
  std::vector<Pair> pairs;

  // `g`: the seed-0 generator the linear case's inputs are drawn from; section (c) draws on from it.
  explicit HandLoops(at::Generator& g) {
    lx = at::randn({32, 64}, g), lw = at::randn({48, 64}, g), lb = at::randn({48}, g);
    auto gc = gen(0);
    cx = at::randn({2, 8, 16, 16}, gc), cw = at::randn({16, 8, 3, 3}, gc), cb = at::randn({16}, gc);
    auto gs = gen(0);
    sx = at::rand({32, 100}, gs) * 200 - 100;
    add_op_pairs();
    add_model_pairs();
  }
  HandLoops(const HandLoops&) = delete;
  HandLoops& operator=(const HandLoops&) = delete;

  void add_op_pairs() {
    pairs = {
        {"op/linalg/linear/f32/contiguous/forward",
         [this]() -> std::function<void()> {
           return [x = lx.clone(), w = lw.clone(), b = lb.clone()] {
             at::NoGradGuard ng;
             (void)at::linear(x, w, b);
           };
         }},
        {"op/conv/conv2d/f32/contiguous/forward",
         [this]() -> std::function<void()> {
           return [x = cx.clone(), w = cw.clone(), b = cb.clone()] {
             at::NoGradGuard ng;
             (void)at::conv2d(x, w, b, {1, 1}, {1, 1});
           };
         }},
        {"op/softmax/softmax/f32/contiguous/forward",
         [this]() -> std::function<void()> {
           return [x = sx.clone()] {
             at::NoGradGuard ng;
             (void)at::softmax(x, -1);
           };
         }},
        // A backward case: the op's forward with gradients on, then backward of the sum of its output
        // weighted by a grad_output drawn once (float32, from the seed + 1 generator), the leaves'
        // gradients cleared before each step, as op_workload.hpp does it.
        {"op/linalg/linear/f32/contiguous/backward",
         [this]() -> std::function<void()> {
           auto gg = gen(1);
           return [x = lx.clone().requires_grad_(), w = lw.clone().requires_grad_(), b = lb.clone().requires_grad_(),
                   g = at::randn({32, 48}, gg)]() mutable {
             for (at::Tensor* leaf : {&x, &w, &b}) leaf->mutable_grad() = at::Tensor();
             (at::linear(x, w, b) * g).sum().backward();
           };
         }},
    };
  }

  void add_model_pairs() {
    // The models' inputs, as model.hpp draws them for Setup{seed 0, not quick}.
    auto gm = gen(7);
    mlp_x = at::randn({1024, 1024}, gm, at::kFloat);
    auto gn = gen(7);
    mnist_x = at::rand({128, 1, 28, 28}, gn, at::kFloat);
    mlp = std::make_shared<HandMlp>();
    cnn = std::make_shared<HandMnistCnn>();
    // Training: forward, mean loss, backward, SGD(0.01) step, on a network of its own.
    auto mlp_train = std::make_shared<HandMlp>();
    auto sgd = std::make_shared<torch::optim::SGD>(mlp_train->parameters(), torch::optim::SGDOptions(0.01));
    auto train_step = [mlp_train, sgd, &x = mlp_x] {
      sgd->zero_grad();
      at::Tensor loss = mlp_train->forward(x).mean();
      loss.backward();
      sgd->step();
      return loss;
    };
    pairs.push_back({"model/mlp/infer", [net = mlp, &in = mlp_x]() -> std::function<void()> {
                       return [net, x = in.clone()] {
                         at::NoGradGuard ng;
                         (void)net->forward(x);
                       };
                     }});
    pairs.push_back({"model/mnist_cnn/infer", [net = cnn, &in = mnist_x]() -> std::function<void()> {
                       return [net, x = in.clone()] {
                         at::NoGradGuard ng;
                         (void)net->forward(x);
                       };
                     }});
    pairs.push_back(
        {"model/mlp/train", [train_step]() -> std::function<void()> { return [train_step] { (void)train_step(); }; }});
  }
};

// What every section reads.
struct Bench {
  explicit Bench(const Registry& r) : registry(r) {}
  const Registry& registry;
  ExecuteOptions options;           // a case timed in process: cpu, 1 s
  at::Generator g = gen(0);         // seed 0: the linear case's inputs, then (c)'s tensors
  std::unique_ptr<HandLoops> hand;  // (a)'s loops, made before any section runs
  std::string dir;                  // the scratch folder of the mpscheck runs
};

// (d) and (e): the op cases of a few families, --quick, untimed.
const std::string kVerdictFilter =
    "--ops --quick --min-time 0 --target cpu --filter '^op/(activation|reduction|linalg)/'";

// (a) The hand networks compute what the cases compute.
void check_hand_networks(Bench& b) {
  const HandLoops& loops = *b.hand;
  std::cout
      << "(a) check: the hand-written networks reproduce the cases' outputs (largest difference; 0 = bit for bit)\n";
  auto case_outputs = [&](const std::string& id) {
    const RegisteredWorkload* w = b.registry.find(id);
    if (!w) return Outputs{};
    return w->workload->instantiate(Setup{}, Placement{})->run();
  };
  {
    at::NoGradGuard ng;
    std::cout << fmt::format(
        "  model/mlp/infer       out          {:.3g}\n",
        disagreement(output_named(case_outputs("model/mlp/infer"), "out"), loops.mlp->forward(loops.mlp_x)));
    std::cout << fmt::format(
        "  model/mnist_cnn/infer out          {:.3g}\n",
        disagreement(output_named(case_outputs("model/mnist_cnn/infer"), "out"), loops.cnn->forward(loops.mnist_x)));
  }
  {
    const Outputs trained = case_outputs("model/mlp/train");
    HandMlp fresh;
    torch::optim::SGD opt(fresh.parameters(), torch::optim::SGDOptions(0.01));
    double worst = 0;
    for (int s = 0; s < 4; ++s) {
      opt.zero_grad();
      at::Tensor loss = fresh.forward(loops.mlp_x).mean();
      loss.backward();
      opt.step();
      worst = std::max(worst, disagreement(output_named(trained, "loss/step" + std::to_string(s)), loss.detach()));
    }
    std::cout << fmt::format("  model/mlp/train       loss/step0-3 {:.3g}\n", worst);
  }
}

void section_a(Bench& b) {
  check_hand_networks(b);
  const HandLoops& loops = *b.hand;
  // Alternating rounds per case (mpscheck, loop, mpscheck, ...), so drift hits both alike, each
  // on fresh buffers. A microsecond kernel's time depends on where its buffers landed (linear
  // here: 4.9 or 8.4 us per instance, about evenly), so a median of three rounds per side can
  // compare one placement with the other; the fastest round of each side compares like with
  // like. Op rows take nine rounds of 0.2 s a side, model rows three of 1 s.
  std::cout << "\n(a) reported reference median vs a hand-written loop (goal: within +-3%; the fastest of 9 rounds "
               "per side for ops, of 3 for models, each round on fresh buffers)\n";
  std::cout << fmt::format("  {:<44} {:>12} {:>12} {:>8}\n", "case", "mpscheck", "hand loop", "ratio");
  for (const auto& p : loops.pairs) {
    const RegisteredWorkload* w = b.registry.find(p.id);
    if (!w) {
      std::cout << "  " << p.id << ": not loaded\n";
      continue;
    }
    const bool op = p.id.rfind("op/", 0) == 0;
    ExecuteOptions timed = b.options;
    timed.min_time_s = op ? 0.2 : 1.0;
    std::vector<double> tool, hand;
    for (int round = 0; round < (op ? 9 : 3); ++round) {
      const CaseResult r = execute_case(*w, timed);
      if (!r.reference_time) break;
      tool.push_back(r.reference_time->median_s);
      hand.push_back(hand_median(p.hand(), timed.min_time_s));
    }
    if (tool.empty()) {
      std::cout << "  " << p.id << ": not timed\n";
      continue;
    }
    const double t = *std::min_element(tool.begin(), tool.end()), h = *std::min_element(hand.begin(), hand.end());
    std::cout << fmt::format("  {:<44} {:>9.2f} us {:>9.2f} us {:>8.3f}\n", p.id, t * 1e6, h * 1e6, t / h);
  }
}

// (b) Host cost. A run without timing (--min-time 0) spends, per case, everything but the timed
// loops: creating both sides, the reference run, the determinism re-run of the reference, the
// target run, the comparison, a float64 gold run when one is needed, the worker protocol and the
// report. Its wall time less one reference iteration and one target iteration (the medians of a
// timed run of the same cases) is the host cost; divided by those two iterations it says how
// much a verdict costs beyond the compute it checks. The compute is not padded by --min-time.
void section_b(Bench& b) {
  const std::string b_filter =
      "--filter 'model/(mlp|mnist_cnn)/|op/(linalg/linear|conv/conv2d|softmax/softmax)/f32/contiguous/forward'";
  std::cout << "\n(b) host cost per case (everything but the timed loops) vs its compute (one reference + one target "
               "iteration)\n";
  const double untimed_s = run_mpscheck(b.dir, b_filter + " --target cpu --jobs 1 --min-time 0 --json untimed.json");
  const double timed_s = run_mpscheck(b.dir, b_filter + " --target cpu --jobs 1 --min-time 0.2 --json timed.json");
  try {
    if (untimed_s < 0 || timed_s < 0) throw std::runtime_error("an mpscheck run failed");
    const RunReport untimed = read_json_report(b.dir + "/untimed.json");
    const RunReport timed = read_json_report(b.dir + "/timed.json");
    std::map<std::string, const CaseResult*> timed_by_id;
    for (const auto& c : timed.cases) timed_by_id[c.id] = &c;
    std::cout << fmt::format("  {:<44} {:>9} {:>10} {:>9} {:>9} {:>8}\n", "case", "wall s", "compute s", "host s",
                             "compare s", "host/compute");
    std::vector<double> model_ratios;
    for (size_t i = 0; i < untimed.cases.size(); ++i) {
      const auto& c = untimed.cases[i];
      auto t = timed_by_id.find(c.id);
      if (t == timed_by_id.end() || !t->second->reference_time || !t->second->target_time) {
        std::cout << fmt::format("  {:<44} not timed ({})\n", c.id, to_string(c.status));
        continue;
      }
      const double compute = t->second->reference_time->median_s + t->second->target_time->median_s;
      double wall = c.wall_s;
      // The first case also pays for starting the worker (process, LibTorch, plugins): once per
      // run and after a crash, not per case, so it is shown apart.
      if (i == 0) {
        std::cout << fmt::format("  worker start-up (once per run, paid by the first case): {:.3f} s\n",
                                 c.wall_s - c.worker_s);
        wall = c.worker_s;
      }
      const double host = wall - compute;
      if (c.kind == Kind::Model) model_ratios.push_back(host / compute);
      std::cout << fmt::format("  {:<44} {:>9.4f} {:>10.5f} {:>9.4f} {:>9.4f} {:>8.2f}{}\n", c.id, wall, compute, host,
                               c.compare_s, host / compute, i == 0 ? "  (start-up left out)" : "");
    }
    if (!model_ratios.empty())
      std::cout << fmt::format("  model cases: median host/compute {:.2f}, worst {:.2f}\n", median_of(model_ratios),
                               *std::max_element(model_ratios.begin(), model_ratios.end()));
  } catch (const std::exception& e) {
    std::cout << "  failed: " << e.what() << '\n';
  }
}

// (c) compare_tensors' throughput against memcpy. Both move the same bytes through memory:
// memcpy reads and writes B bytes, the comparison reads the two tensors' B bytes. The target
// differs from the reference inside the tolerance (the common case), so every element is looked
// at; bytes per second count both tensors. Rounded to float16 or bfloat16 on both sides, a
// relative difference of 1e-7 leaves all but a few elements equal, so those pairs are measured
// once more with about a third of the elements a rounding step or two apart ("differing": 3e-4
// and 2e-3 apart before rounding; float16 with rtol 4e-3, as 1e-3 is not two steps), where ties
// with the largest error so far are common. The last column is the share of elements that differ. Both run on one
// thread and are timed in that thread's CPU time: on a shared machine the time the scheduler gives to other processes
// would otherwise land on whichever side it happened to interrupt.
void section_c(Bench& b) {
  std::cout
      << "\n(c) compare_tensors throughput vs memcpy (one thread each, thread CPU time; 16M elements per tensor)\n";
  std::cout << fmt::format("  {:<32} {:>10} {:>10} {:>8} {:>8}\n", "reference vs target", "compare", "memcpy", "ratio",
                           "differ");
  const int64_t n = 16 << 20;
  const at::Tensor base = at::randn({n}, b.g);
  const at::Tensor near = base * (1 + 1e-7 * at::randn({n}, b.g));
  const at::Tensor noise = at::randn({n}, b.g);
  const at::Tensor half_apart = base * (1 + 3e-4 * noise), bfloat16_apart = base * (1 + 2e-3 * noise);
  struct Kind {
    const char* name;
    c10::ScalarType reference, target;
    Tolerance tol;
    const at::Tensor& target_values;
  };
  const Kind kinds[] = {
      {"float32 vs float32", at::kFloat, at::kFloat, Tolerance{1.3e-6, 1e-5}, near},
      {"float16 vs float16", at::kHalf, at::kHalf, Tolerance{1e-3, 1e-5}, near},
      {"bfloat16 vs bfloat16", at::kBFloat16, at::kBFloat16, Tolerance{1.6e-2, 1e-5}, near},
      {"float32 vs float16", at::kFloat, at::kHalf, Tolerance{1e-3, 1e-5}, near},
      {"float32 vs bfloat16", at::kFloat, at::kBFloat16, Tolerance{1.6e-2, 1e-5}, near},
      {"float16 vs float16, differing", at::kHalf, at::kHalf, Tolerance{4e-3, 1e-5}, half_apart},
      {"bfloat16 vs bfloat16, differing", at::kBFloat16, at::kBFloat16, Tolerance{1.6e-2, 1e-5}, bfloat16_apart}};
  for (const auto& k : kinds) {
    const at::Tensor r = base.to(k.reference), t = k.target_values.to(k.target);
    const double bytes = static_cast<double>(r.nbytes() + t.nbytes());
    std::vector<char> src(static_cast<size_t>(bytes / 2)), dst(src.size());
    std::memset(src.data(), 1, src.size());
    std::memset(dst.data(), 2, dst.size());
    // Alternate the two, three rounds, so a busy neighbour slows both alike.
    std::vector<double> cmp_gbs, copy_gbs;
    bool ok = true;
    for (int round = 0; round < 3; ++round) {
      const double c = cpu_median([&] { ok &= compare_tensors("out", r, t, k.tol, k.target).ok; }, 1.0);
      const double m = cpu_median([&] { std::memcpy(dst.data(), src.data(), src.size()); }, 0.5);
      cmp_gbs.push_back(bytes / c / 1e9);
      copy_gbs.push_back(2 * src.size() / m / 1e9);
    }
    const double cm = median_of(cmp_gbs), mm = median_of(copy_gbs);
    const double differ = r.to(at::kFloat).ne(t.to(at::kFloat)).to(at::kDouble).mean().item<double>();
    std::cout << fmt::format("  {:<32} {:>6.2f} GB/s {:>5.2f} GB/s {:>8.3f} {:>7.2f}%{}\n", k.name, cm, mm, cm / mm,
                             100 * differ, ok ? "" : "  (the comparison failed: these inputs are not the common case)");
  }
}

// (d) Verdicts per second: the op cases of a few families, --quick, untimed, with one worker and
// with two (the default on this machine's two cores).
void section_d(Bench& b) {
  std::cout << "\n(d) verdict throughput (" << kVerdictFilter << ")\n";
  std::map<int, double> cases_per_s;
  for (int jobs : {1, 2}) {
    const std::string json = fmt::format("jobs{}.json", jobs);
    const double s = run_mpscheck(b.dir, fmt::format("{} --jobs {} --json {}", kVerdictFilter, jobs, json));
    try {
      if (s < 0) throw std::runtime_error("the mpscheck run failed");
      const RunReport rep = read_json_report(b.dir + "/" + json);
      cases_per_s[jobs] = rep.cases.size() / s;
      std::cout << fmt::format("  --jobs {}: {} cases in {:.1f} s, {:.1f} cases/s (whole process, start-up included)\n",
                               jobs, rep.cases.size(), s, cases_per_s[jobs]);
    } catch (const std::exception& e) {
      std::cout << "  --jobs " << jobs << ": failed: " << e.what() << '\n';
    }
  }
  if (cases_per_s.count(1) && cases_per_s.count(2))
    std::cout << fmt::format("  ratio --jobs 2 / --jobs 1: {:.2f}\n", cases_per_s[2] / cases_per_s[1]);
}

// (e) The reference cache: the same run twice with --reference-cache on a fresh directory; the
// second computes only the target side. A run without the cache, just before, is the baseline
// both are set against.
void section_e(Bench& b) {
  std::cout << "\n(e) reference cache: a run without it, a first run (fills it), a second run (uses it), "
            << kVerdictFilter << " --jobs 1\n";
  const std::string cache = b.dir + "/reference-cache";
  std::filesystem::remove_all(cache);
  const std::string e_args = fmt::format("{} --jobs 1 --reference-cache '{}'", kVerdictFilter, cache);
  const double plain = run_mpscheck(b.dir, kVerdictFilter + " --jobs 1 --json nocache.json");
  const double first = run_mpscheck(b.dir, e_args + " --json cache1.json");
  const double second = run_mpscheck(b.dir, e_args + " --json cache2.json");
  try {
    if (plain < 0 || first < 0 || second < 0) throw std::runtime_error("an mpscheck run failed");
    const RunReport rep = read_json_report(b.dir + "/cache2.json");
    const auto cached =
        std::count_if(rep.cases.begin(), rep.cases.end(), [](const CaseResult& c) { return c.reference_cached; });
    std::cout << fmt::format("  without {:.1f} s, first {:.1f} s, second {:.1f} s ({} of {} cases from the cache)\n",
                             plain, first, second, cached, rep.cases.size());
    std::cout << fmt::format("  speed-up first/second {:.2f}x, without/second {:.2f}x\n", first / second,
                             plain / second);
  } catch (const std::exception& e) {
    std::cout << "  failed: " << e.what() << '\n';
  }
}

// (f) Per-op replay: the same model cases with their ATen calls recorded and replayed alone on the
// target, and with --no-op-replay (the run before issue 49), in turn, twice, the ratio pair by pair.
// Untimed (--min-time 0), so the ratio is the verdict's cost alone.
void section_f(Bench& b) {
  const std::string args =
      "--quick --min-time 0 --jobs 1 --target cpu:bfloat16 --filter "
      "'^model/(mlp|mnist_cnn|lenet5|resnet18)/(infer|train)$'";
  std::cout << "\n(f) per-op replay: " << args << ", with and without --no-op-replay, in turn\n";
  try {
    for (int pair = 1; pair <= 2; ++pair) {
      const double with = run_mpscheck(b.dir, args + " --json replay.json");
      const double without = run_mpscheck(b.dir, args + " --no-op-replay --json plain.json");
      if (with < 0 || without < 0) throw std::runtime_error("an mpscheck run failed");
      int replayed = 0, findings = 0;
      for (const CaseResult& c : read_json_report(b.dir + "/replay.json").cases)
        if (c.op_replay) {
          replayed += c.op_replay->replayed;
          findings += c.op_replay->findings();
        }
      std::cout << fmt::format(
          "  pair {}: with {:.1f} s ({} distinct calls replayed, {} wrong alone), without "
          "{:.1f} s: ratio {:.2f}x\n",
          pair, with, replayed, findings, without, with / without);
    }
  } catch (const std::exception& e) {
    std::cout << "  failed: " << e.what() << '\n';
  }
}

// The sections, run in this order; the command line's letters choose among them.
struct Section {
  char letter;
  void (*run)(Bench&);
};
const Section kSections[] = {{'a', section_a}, {'b', section_b}, {'c', section_c},
                             {'d', section_d}, {'e', section_e}, {'f', section_f}};

}  // namespace

// An argument of section letters runs only those sections ("c": the comparison alone); none runs all.
int main(int argc, char** argv) {
  const std::string sections = argc > 1 ? argv[1] : "abcdef";
  PluginHost host;
  host.load_directory(MPSCHECK_PLUGINS_DIR);
  const Registry registry(host.workloads());
  Bench bench(registry);
  bench.options.target = parse_target("cpu");
  bench.options.min_time_s = 1.0;
  std::cout << std::unitbuf;
  std::cout << "One run on " << std::thread::hardware_concurrency()
            << " hardware threads; the machine may be shared, so figures move with its load.\n\n";
  bench.hand = std::make_unique<HandLoops>(bench.g);
  bench.dir = (std::filesystem::temp_directory_path() / "mpscheck-bench").string();
  std::filesystem::remove_all(bench.dir);
  std::filesystem::create_directories(bench.dir);
  for (const Section& s : kSections)
    if (sections.find(s.letter) != std::string::npos) s.run(bench);
  return 0;
}
