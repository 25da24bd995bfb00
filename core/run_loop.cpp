#include "core/run_loop.hpp"

#include "checks/recommend.hpp"
#include "core/execute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace mpscheck {

int default_jobs(const TargetSpec& target) {
  if (target.device != "cpu") return 1;
  return std::max(1u, std::thread::hardware_concurrency());
}

int verdict_threads_for(int jobs, int threads) {
  if (threads > 0 || jobs <= 1) return threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(jobs)));
}

int canonical_verdict_threads(const TargetSpec& target) { return verdict_threads_for(default_jobs(target), 0); }

namespace {

// What every worker thread shares: the listeners, the results and the first reason to stop. One
// lock: a case takes tens of milliseconds at least, so it is never contended; it also keeps the
// listeners' events one at a time.
class RunState {
 public:
  RunState(const std::vector<PlannedCase>& plan, size_t already_done, const RunLoopOptions& options,
           RunListener& listeners)
      : plan_(plan), results_(plan.size()), finished_(already_done), options_(options), listeners_(listeners) {}

  bool should_stop() const { return stop_.load() || g_interrupted; }

  // Sends run_started; false when a listener stopped the run.
  bool start(size_t resumed) {
    std::lock_guard<std::mutex> lock(mutex_);
    return send_locked([&] { listeners_.run_started({options_.target.str(), plan_.size(), resumed}); });
  }

  // Runs plan[i] on `runner` and records it; false when the run must stop.
  bool run_one(Runner& runner, size_t i) {
    const RegisteredWorkload& rw = plan_[i].workload;
    const Workload& w = *rw.workload;
    const std::string id = w.id();
    if (!started(id)) return false;
    const auto t0 = std::chrono::steady_clock::now();
    const double timeout = w.kind() == Kind::Model ? options_.timeout_model_s : options_.timeout_op_s;
    CaseResult r;
    try {
      r = runner.run(id, timeout, plan_[i].timed);
    } catch (const WorkerStartError& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_locked(
          fmt::format("{} (stopped before case {}; the {} cases finished in this run are in {}; fix the cause, "
                      "then run the same command with --resume)",
                      e.what(), id, recorded_, options_.journal_path));
      return false;
    }
    if (g_interrupted) return false;  // an interrupted case is not recorded: --resume runs it again
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.timed = plan_[i].timed;
    identify(r, rw, options_.target);
    recommend(r);
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return false;
    // The journal is the first listener: a case it could not keep is neither printed nor recorded.
    if (!send_locked([&] { listeners_.case_finished(finished_, plan_.size(), r); })) return false;
    ++finished_;
    ++recorded_;
    results_[i] = std::move(r);
    return true;
  }

  RunOutcome outcome(const std::map<std::string, CaseResult>& done) {
    RunOutcome out;
    for (size_t i = 0; i < plan_.size(); ++i) {
      const std::string id = plan_[i].workload.workload->id();
      if (auto it = done.find(id); it != done.end())
        out.cases.push_back(it->second);
      else if (results_[i])
        out.cases.push_back(std::move(*results_[i]));
    }
    out.interrupted = g_interrupted;
    if (!why_.empty()) out.stopped = why_;
    return out;
  }

 private:
  bool started(const std::string& id) {
    std::lock_guard<std::mutex> lock(mutex_);
    return send_locked([&] { listeners_.case_started(finished_, plan_.size(), id); });
  }

  // Sends one event; a listener's RunStopped stops the run with its line.
  template <typename Send>
  bool send_locked(Send send) {
    try {
      send();
      return true;
    } catch (const RunStopped& e) {
      stop_locked(e.what());
      return false;
    }
  }

  void stop_locked(const std::string& why) {
    if (why_.empty()) why_ = why;
    stop_ = true;
  }

  const std::vector<PlannedCase>& plan_;
  std::vector<std::optional<CaseResult>> results_;
  size_t finished_;
  size_t recorded_ = 0;  // the cases this run finished (not the resumed ones)
  const RunLoopOptions& options_;
  RunListener& listeners_;
  std::mutex mutex_;
  std::atomic<bool> stop_{false};
  std::string why_;
};

}  // namespace

RunOutcome execute_plan(const std::vector<PlannedCase>& plan, const std::map<std::string, CaseResult>& done,
                        const RunLoopOptions& options, Runner& timed_runner, RunListener& listeners) {
  std::vector<size_t> timed, verdict_only;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (done.count(plan[i].workload.workload->id())) continue;
    (plan[i].timed || options.jobs <= 1 ? timed : verdict_only).push_back(i);
  }
  RunState state(plan, done.size(), options, listeners);
  if (!state.start(done.size())) return state.outcome(done);

  // One worker: the plan's order. Timed cases never share the machine with another worker.
  for (size_t i : timed)
    if (state.should_stop() || !state.run_one(timed_runner, i)) break;
  if (verdict_only.empty() || state.should_stop()) return state.outcome(done);
  timed_runner.stop();  // its memory goes back before `jobs` fresh workers start

  std::atomic<size_t> next{0};
  const int workers = std::min<int>(options.jobs, static_cast<int>(verdict_only.size()));
  auto work = [&](int k) {
    WorkerConfig config = options.worker;
    config.threads = options.verdict_threads;
    const std::string log = options.report_dir + (k == 0 ? "/worker.log" : fmt::format("/worker-{}.log", k + 1));
    Runner runner(config, log, options.runner);
    for (size_t n = next++; n < verdict_only.size(); n = next++)
      if (state.should_stop() || !state.run_one(runner, verdict_only[n])) break;
  };
  std::vector<std::thread> threads;
  for (int k = 0; k < workers; ++k) threads.emplace_back(work, k);
  for (auto& t : threads) t.join();
  return state.outcome(done);
}

}  // namespace mpscheck
