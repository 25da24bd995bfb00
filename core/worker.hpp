// The worker process: the same binary in `--worker` mode, started with posix_spawn (never a bare
// fork after a device is initialised). The host writes one JSON config line and then one request
// line per case on the worker's stdin; the worker answers each with one CaseResult JSON line on
// fd 3. The worker's stdout and stderr go to a log file, whose tail explains a crash.
#pragma once

#include "core/result.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <csignal>
#include <sys/types.h>

namespace mpscheck {

// Entry point of `mpscheck --worker`.
int worker_main();

// Host side: one live worker at a time, restarted after a crash or a timeout.
class Runner {
 public:
  Runner(nlohmann::json worker_config, std::string log_path);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Runs case `id` with a deadline; never throws for anything the worker does.
  CaseResult run(const std::string& id, double timeout_s);
  // Stops the worker (e.g. on Ctrl-C); the next run() starts a fresh one.
  void stop();

 private:
  bool start(std::string* why);
  // Reads one line from the worker before `deadline_s` from now. Returns false on EOF/timeout.
  enum class ReadResult { Line, Eof, Timeout, Interrupted };
  ReadResult read_line(double timeout_s, std::string* line);
  std::string describe_exit(int wait_status) const;
  std::string log_tail_since(long offset) const;
  void reap(int* wait_status);

  nlohmann::json config_;
  std::string log_path_;
  pid_t pid_ = -1;
  int to_worker_ = -1, from_worker_ = -1, log_fd_ = -1;
  std::string buffer_;
};

// Set by the host's SIGINT/SIGTERM handler; the runner stops waiting and the run ends early.
extern volatile sig_atomic_t g_interrupted;

}  // namespace mpscheck
