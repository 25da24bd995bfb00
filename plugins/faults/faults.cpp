// The faults plugin: healthy computations that go wrong on the target side (and one whose CPU
// reference stalls, as on a busy machine), in every way the runner and the checks must survive
// and name. Never installed; tests load it with --plugin-dir.
#include <mpscheck/plugin.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace {

using namespace mpscheck;

enum class Fault { None, Segfault, Abort, Terminate, Hang, Throw, Unsupported, Nan, Wrong, Slow, StalledReference };

struct FaultSpec {
  const char* name;
  Fault fault;
};

const FaultSpec kFaults[] = {
    {"healthy", Fault::None},
    {"segfault", Fault::Segfault},
    {"abort", Fault::Abort},
    {"terminate", Fault::Terminate},
    {"hang", Fault::Hang},
    {"throw", Fault::Throw},
    {"unsupported", Fault::Unsupported},
    {"nan", Fault::Nan},
    {"wrong", Fault::Wrong},
    {"slow", Fault::Slow},
    // The CPU reference is crowded off its core for 2 ms per iteration by spinning threads: what a
    // reference on a machine busy with other work lives through (its thread waits in the run
    // queue). Its target is not faster, and must not be called so.
    {"stalled_reference", Fault::StalledReference},
};

// The planted error of the "wrong" fault: element 7 of the output is off by exactly this much,
// or by MPSCHECK_FAULTS_WRONG_BY (a test makes a known finding grow past its expected bound).
double wrong_by() {
  const char* env = std::getenv("MPSCHECK_FAULTS_WRONG_BY");
  return env && *env ? std::strtod(env, nullptr) : 1e-3;
}

// MPSCHECK_FAULTS_CPU_LACKS=1: every case's CPU reference raises as a CPU that lacks the op does,
// so the host skips the case: what a finding that is no longer judged looks like to `compare`.
bool cpu_lacks_the_op() {
  const char* env = std::getenv("MPSCHECK_FAULTS_CPU_LACKS");
  return env && std::string(env) == "1";
}

class FaultInstance final : public Instance {
 public:
  FaultInstance(Fault fault, const Setup& setup, const Placement& where)
      : reference_(where.side == Side::Reference),
        fault_(fault == Fault::StalledReference ? (where.side == Side::Reference ? fault : Fault::None)
               : where.side == Side::Target     ? fault
                                                : Fault::None) {
    at::Generator gen = at::detail::createCPUGenerator(setup.seed);
    x_ = at::randn({256}, gen, at::kFloat).to(where.device, where.dtype);
  }

  Outputs run() override {
    if (reference_ && cpu_lacks_the_op())
      throw std::runtime_error("planted: \"faulty_kernel\" not implemented for 'CPU'");
    at::Tensor out = compute();
    switch (fault_) {
      case Fault::Segfault: std::raise(SIGSEGV); break;
      case Fault::Abort: std::abort();
      case Fault::Terminate: std::terminate();
      case Fault::Hang:
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      case Fault::Throw: throw std::runtime_error("planted failure: the kernel raised an unexpected error");
      case Fault::Unsupported:
        throw std::runtime_error("planted: \"faulty_kernel\" not implemented for 'Float' on this device");
      case Fault::Nan:
        out = out.clone();
        out[3] = std::nan("");
        break;
      case Fault::Wrong:
        out = out.clone();
        out[7] = out[7] + wrong_by();
        break;
      default: break;
    }
    return {{"out", out}};
  }

  void iterate() override {
    compute();
    if (fault_ == Fault::Slow) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (fault_ == Fault::StalledReference) crowd_the_cores(std::chrono::milliseconds(2));
  }

  // Other work takes the reference's core for `how_long`. On Linux the calling thread is pinned to
  // the core it is on, two spinning threads are started there (they inherit the pin), and the
  // caller yields to them until the deadline: it is runnable and waiting in that core's run queue
  // for nearly all of it (98% of its wall time here, under a build and idle alike), which is what
  // the busy rule reads. Spinners spread over every core instead, with the caller spinning among
  // them, left it to the scheduler whether the caller waited: here it waited 1-16% of the time,
  // and CI's machine called the stalled case 120x faster. (Threads joined inside a timed block are
  // gone by its end, with their own waiting, so only the caller's waiting can be read.)
  static void crowd_the_cores(std::chrono::milliseconds how_long) {
    const auto until = std::chrono::steady_clock::now() + how_long;
    auto spin = [until] {
      volatile unsigned long spins = 0;
      while (std::chrono::steady_clock::now() < until) spins = spins + 1;
    };
#if defined(__linux__)
    cpu_set_t saved;
    CPU_ZERO(&saved);
    bool pinned = false;
    const int cpu = ::sched_getcpu();
    if (cpu >= 0 && ::pthread_getaffinity_np(::pthread_self(), sizeof saved, &saved) == 0) {
      cpu_set_t here;
      CPU_ZERO(&here);
      CPU_SET(cpu, &here);
      pinned = ::pthread_setaffinity_np(::pthread_self(), sizeof here, &here) == 0;
    }
#else
    const bool pinned = false;
#endif
    std::vector<std::thread> spinners;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < (pinned ? 2 : 2 * cores); ++i) spinners.emplace_back(spin);
    if (pinned) {
      while (std::chrono::steady_clock::now() < until) std::this_thread::yield();
    } else {
      spin();
    }
    for (auto& t : spinners) t.join();
#if defined(__linux__)
    if (pinned) ::pthread_setaffinity_np(::pthread_self(), sizeof saved, &saved);
#endif
  }

 private:
  at::Tensor compute() const { return x_ * 2 + 1; }
  bool reference_;
  Fault fault_;
  at::Tensor x_;
};

class FaultWorkload final : public Workload {
 public:
  explicit FaultWorkload(FaultSpec spec) : spec_(spec) {}
  std::string id() const override { return std::string("op/faults/") + spec_.name; }
  Kind kind() const override { return Kind::Op; }
  std::vector<std::string> tags() const override { return {"faults", "test-only"}; }
  std::unique_ptr<Instance> instantiate(const Setup& setup, const Placement& where) const override {
    return std::make_unique<FaultInstance>(spec_.fault, setup, where);
  }

 private:
  FaultSpec spec_;
};

}  // namespace

MPSCHECK_CATALOG(fault_cases) {
  for (const auto& f : kFaults) catalog.add(std::make_unique<FaultWorkload>(f));
}

MPSCHECK_PLUGIN("faults", "0.1.0")
