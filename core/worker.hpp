// The worker process: the same binary in `--worker` mode, started with posix_spawn (never a bare
// fork after a device is initialised). The host writes one JSON config line and then one request
// line per case on the worker's stdin; the worker answers each with one CaseResult JSON line on
// fd 3. The worker's stdout and stderr go to a log file, whose tail explains a crash.
#pragma once

#include "checks/result.hpp"
#include "core/worker_protocol.hpp"

#include <nlohmann/json.hpp>

#include <csignal>
#include <stdexcept>
#include <string>
#include <sys/types.h>
#include <vector>

namespace mpscheck {

// Entry point of `mpscheck --worker`.
int worker_main();

// The worker could not be started at all (not a case's fault): the run stops with this one line.
struct WorkerStartError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RunnerOptions {
  // Loading LibTorch and every plugin: generous, but not forever.
  double start_timeout_s = 300;
  // After the worker closed its result pipe: how long it may take to exit on its own before SIGKILL.
  double exit_grace_s = 2;
  // After SIGKILL: how long to wait for the kernel to reap it. A worker stuck in the kernel (a
  // wedged GPU driver) is abandoned after this instead of hanging the run.
  double kill_wait_s = 10;
  // Accelerator targets: any target failure (error, mismatch, nan) may leave the device in a bad
  // state (a wedged MPS queue), so the next case gets a fresh worker. A sticky device error (CUDA's
  // sticky codes, a failed Metal command buffer) gets one on every target (needs_fresh_worker in
  // checks/errors.hpp).
  bool fresh_worker_after_error = false;
};

// Host side: one live worker at a time, restarted after a crash or a timeout. run and stop are
// virtual so the run loop's unit tests can stand in a runner that starts no process.
class Runner {
 public:
  Runner(const WorkerConfig& worker_config, std::string log_path, RunnerOptions options = {});
  virtual ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Runs case `id` with a deadline (timed, or verdict only); never throws for anything a case
  // does. Throws WorkerStartError when no worker can be started, which no later case would change.
  virtual CaseResult run(const std::string& id, double timeout_s, bool time = true);
  // Stops the worker (e.g. on Ctrl-C); the next run() starts a fresh one.
  virtual void stop();
  // Workers started so far (1 for a run where nothing went wrong).
  int workers_started() const { return started_; }

 private:
  void start();
  // Reads one line from the worker before `timeout_s` from now.
  enum class ReadResult { Line, Eof, Timeout, Interrupted };
  ReadResult read_line(double timeout_s, std::string* line);
  std::string log_tail_since(long offset) const;
  // Closes the pipes, gives the worker `grace_s` to exit, then SIGKILLs it and waits at most
  // kill_wait_s. Returns false (and abandons the pid) when it could not be reaped in time.
  bool finish(double grace_s, int* wait_status);

  WorkerConfig config_;
  std::string log_path_;
  RunnerOptions options_;
  pid_t pid_ = -1;
  int to_worker_ = -1, from_worker_ = -1, log_fd_ = -1;
  std::string buffer_;
  int started_ = 0;
  std::vector<pid_t> abandoned_;  // killed but not reaped yet; retried without blocking
};

// "SIGSEGV (Segmentation fault)", "exit code 2": how a worker ended, for messages.
std::string describe_wait_status(int wait_status);

// Waits up to `seconds` for `pid` to exit; true once reaped (status in *wait_status).
bool wait_for_exit(pid_t pid, double seconds, int* wait_status);

// Set by the host's SIGINT/SIGTERM handler; the runner stops waiting and the run ends early.
extern volatile sig_atomic_t g_interrupted;

}  // namespace mpscheck
