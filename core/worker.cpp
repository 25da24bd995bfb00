#include "core/worker.hpp"

#include "checks/errors.hpp"
#include "core/case_catalog.hpp"
#include "core/case_variant.hpp"
#include "core/memory_cap.hpp"
#include "core/execute.hpp"
#include "core/probe.hpp"
#include "core/reference_cache.hpp"
#include "core/state_probe.hpp"
#include "core/target.hpp"
#include "core/worker_protocol.hpp"

#include <ATen/Parallel.h>
#include <boost/dll/runtime_symbol_info.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

extern char** environ;

namespace mpscheck {

volatile sig_atomic_t g_interrupted = 0;

namespace {

constexpr int kResultFd = 3;

// Both ends close-on-exec from the start (pipe2 makes it atomic where it exists).
int make_pipe(int fds[2]) {
#if defined(__APPLE__)
  if (::pipe(fds) != 0) return -1;
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  return 0;
#else
  return ::pipe2(fds, O_CLOEXEC);
#endif
}

bool write_all(int fd, const std::string& data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGPIPE: return "SIGPIPE";
    default: return nullptr;
  }
}

}  // namespace

// ---------------------------------------------------------------- worker side

namespace {
// Everything the worker needs before its first case; throws for a bad config or a plugin it cannot load.
struct WorkerSetup {
  WorkerConfig config;
  ExecuteOptions options;
  std::unique_ptr<CaseCatalog> catalog;
  std::unique_ptr<ReferenceCache> cache;
};

void set_up_worker(const std::string& config_line, WorkerSetup& w) {
  w.config = nlohmann::json::parse(config_line).get<WorkerConfig>();
  w.options.target = w.config.target;
  w.options.setup.seed = w.config.seed;
  w.options.setup.quick = w.config.quick;
  w.options.replay_ops = w.config.op_replay;
  const int default_threads = at::get_num_threads();  // LibTorch's default, before --threads
  if (w.config.threads > 0) at::set_num_threads(w.config.threads);
  w.options.timing_threads = at::get_num_threads();
  w.options.verdict_threads = w.config.verdict_threads > 0 ? w.config.verdict_threads : default_threads;
  if (!w.config.reference_cache.empty()) {
    w.cache = std::make_unique<ReferenceCache>(w.config.reference_cache);
    w.options.cache = w.cache.get();
    w.options.reuse_reference_times = w.config.reuse_reference_times;
  }
  w.catalog =
      std::make_unique<CaseCatalog>(CatalogSource{w.config.default_plugins, w.config.plugin_dirs, w.config.model,
                                                  w.config.inputs, w.config.train, w.config.model_for, w.config.eager});
}

// The case `id` names (a declared case or an explore variant of one); nullptr with `result` set to
// the case's error when it names none.
const RegisteredWorkload* find_case(CaseResolver& resolver, const std::string& id, CaseResult& result) {
  try {
    return resolver.find(id);
  } catch (const BadVariantId& e) {
    result.id = id;
    result.status = Status::Error;
    result.message = e.what();
    return nullptr;
  }
}

// A huge case the target or this machine cannot hold (core/memory_cap.hpp): `result` its skip.
bool memory_cap_skip(const RegisteredWorkload& found, const TargetSpec& target, CaseResult& result) {
  std::optional<std::string> why;
  try {
    why = memory_cap(*found.workload, target);
  } catch (const std::invalid_argument& e) {
    identify(result, found, target);
    result.status = Status::Error;
    result.message = e.what();
    return true;
  }
  if (!why) return false;
  identify(result, found, target);
  result.status = Status::Skip;
  result.message = *why;
  return true;
}

}  // namespace

int worker_main() {
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed host must not leave a worker running
#endif
  if (fcntl(kResultFd, F_GETFD) < 0) {
    std::cerr << "mpscheck: --worker is internal; run mpscheck without it\n";
    return 2;
  }
  std::string line;
  if (!std::getline(std::cin, line)) return 0;
  WorkerSetup w;
  try {
    set_up_worker(line, w);
  } catch (const std::exception& e) {
    std::cerr << "mpscheck worker: cannot start: " << e.what() << '\n';
    write_all(kResultFd, nlohmann::json{{"ready", false}, {"error", e.what()}}.dump(
                             -1, ' ', false, nlohmann::json::error_handler_t::replace) +
                             "\n");
    return 2;
  }
  // One line per worker in worker.log: how often the host had to start a fresh one.
  const Registry& registry = w.catalog->registry();
  std::cerr << "mpscheck worker " << getpid() << ": ready, " << registry.size() << " cases" << std::endl;
  write_all(kResultFd, nlohmann::json{{"ready", true}, {"cases", registry.size()}}.dump() + "\n");

  CaseResolver resolver(registry);  // declared cases, and the variants `explore` asks for by id
  while (std::getline(std::cin, line)) {
    const auto request = nlohmann::json::parse(line).get<CaseRequest>();
    const std::string& id = request.id;
    CaseResult result;
    if (id == kProbeCaseId) {
      result = run_probe(w.options.target);
    } else if (const RegisteredWorkload* found = find_case(resolver, id, result);
               found && memory_cap_skip(*found, w.options.target, result)) {
      // a huge case that does not fit: its skip says why
    } else if (found) {
      ExecuteOptions options = w.options;
      options.min_time_s = request.time ? w.config.min_time : 0;
      // Written before the phase's work: if the worker dies in it, the host knows whose run it was.
      options.on_phase = [](const std::string& phase) { write_all(kResultFd, phase_message(phase) + "\n"); };
      // A state probe's id (`BASE@~dirty`) runs the case in that state; any other to its verdict.
      const std::optional<VariantId> v = parse_variant_id(id);
      result = run_case_in_state(*found, v ? registry.find(v->base) : nullptr, id, options);
    } else if (result.message.empty()) {
      result.id = id;
      result.status = Status::Error;
      result.message = "the worker does not know this case (plugins changed during the run?)";
    }
    // Invalid UTF-8 in a message must not kill the worker (strict dump() throws on it).
    const std::string line = nlohmann::json(result).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (!write_all(kResultFd, line + "\n")) return 1;
  }
  return 0;
}

// ---------------------------------------------------------------- host side

std::string describe_wait_status(int st) {
  if (WIFSIGNALED(st)) {
    const int sig = WTERMSIG(st);
    const char* name = signal_name(sig);
    std::string s = name ? name : fmt::format("signal {}", sig);
    s += fmt::format(" ({})", strsignal(sig));
    if (sig == SIGKILL) s += ", often the out-of-memory killer";
    return s;
  }
  if (WIFEXITED(st)) return fmt::format("exit code {}", WEXITSTATUS(st));
  return "unknown status";
}

bool wait_for_exit(pid_t pid, double seconds, int* wait_status) {
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      if (wait_status) *wait_status = st;
      return true;
    }
    if (r < 0 && errno != EINTR) {  // ECHILD: not ours, or already reaped
      if (wait_status) *wait_status = 0;
      return true;
    }
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

Runner::Runner(const WorkerConfig& worker_config, std::string log_path, RunnerOptions options)
    : config_(worker_config), log_path_(std::move(log_path)), options_(options) {}

Runner::~Runner() {
  stop();
  if (log_fd_ >= 0) ::close(log_fd_);
}

void Runner::stop() {
  if (pid_ > 0) {
    int st = 0;
    finish(0, &st);
  }
}

bool Runner::finish(double grace_s, int* wait_status) {
  if (to_worker_ >= 0) ::close(to_worker_);
  if (from_worker_ >= 0) ::close(from_worker_);
  to_worker_ = from_worker_ = -1;
  buffer_.clear();
  // Earlier workers that would not die: collect any that finally did, never waiting.
  abandoned_.erase(
      std::remove_if(abandoned_.begin(), abandoned_.end(), [](pid_t p) { return wait_for_exit(p, 0, nullptr); }),
      abandoned_.end());
  const pid_t pid = pid_;
  pid_ = -1;
  if (pid <= 0) return true;
  if (grace_s > 0 && wait_for_exit(pid, grace_s, wait_status)) return true;
  ::kill(pid, SIGKILL);
  if (wait_for_exit(pid, options_.kill_wait_s, wait_status)) return true;
  abandoned_.push_back(pid);
  return false;
}

void Runner::start() {
  if (log_fd_ < 0) {
    log_fd_ = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd_ < 0)
      throw WorkerStartError(fmt::format("cannot open the worker log {}: {}", log_path_, std::strerror(errno)));
  }
  // Atomically close-on-exec: no other thread's spawn can inherit them half-made.
  int in[2], out[2];
  if (make_pipe(in) != 0)
    throw WorkerStartError(fmt::format("cannot create a pipe for the worker: {}", std::strerror(errno)));
  if (make_pipe(out) != 0) {
    const int err = errno;
    ::close(in[0]);
    ::close(in[1]);
    throw WorkerStartError(fmt::format("cannot create a pipe for the worker: {}", std::strerror(err)));
  }

  boost::dll::fs::error_code ec;
  const std::string exe = boost::dll::program_location(ec).string();
  std::vector<std::string> args{exe, "--worker"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, log_fd_, 1);
  posix_spawn_file_actions_adddup2(&actions, log_fd_, 2);
  posix_spawn_file_actions_adddup2(&actions, out[1], kResultFd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Descriptors the host itself inherited without close-on-exec (a CI runner's, a shell's) stay out too.
#if defined(__APPLE__)
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_CLOEXEC_DEFAULT);
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, kResultFd + 1);
#endif
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    throw WorkerStartError(fmt::format("cannot start the worker {}: {}", exe, std::strerror(rc)));
  }
  pid_ = pid;
  to_worker_ = in[1];
  from_worker_ = out[0];
  ++started_;
  struct stat sb {};
  const long offset = ::fstat(log_fd_, &sb) == 0 ? static_cast<long>(sb.st_size) : 0;

  std::string line, why;
  if (!write_all(to_worker_, nlohmann::json(config_).dump() + "\n")) {
    why = "it closed its input at start-up";
  } else {
    const ReadResult rr = read_line(options_.start_timeout_s, &line);
    if (rr == ReadResult::Line) {
      try {
        const WorkerReady ready = parse_ready_message(line);
        if (ready.ok) return;
        why = ready.error;
      } catch (const ProtocolError& e) {
        why = e.what();
      }
    } else if (rr == ReadResult::Timeout) {
      why = fmt::format("it was not ready within {:g} s", options_.start_timeout_s);
    } else if (rr == ReadResult::Interrupted) {
      why = "interrupted while it was starting";
    } else {
      why = "it died while loading LibTorch and the plugins";
    }
  }
  int st = 0;
  const bool reaped = finish(options_.exit_grace_s, &st);
  std::string msg =
      fmt::format("the worker could not start ({}): {}", reaped ? describe_wait_status(st) : "not reaped", why);
  const std::string tail = log_tail_since(offset);
  if (!tail.empty() && why.find(tail) == std::string::npos) msg += "; its last output: " + tail;
  throw WorkerStartError(msg);
}

Runner::ReadResult Runner::read_line(double timeout_s, std::string* line) {
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  for (;;) {
    const auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      *line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return ReadResult::Line;
    }
    if (g_interrupted) return ReadResult::Interrupted;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return ReadResult::Timeout;
    pollfd p{from_worker_, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 250)));
    if (n < 0 && errno != EINTR) return ReadResult::Eof;
    if (n <= 0) continue;
    char buf[65536];
    const ssize_t got = ::read(from_worker_, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return ReadResult::Eof;
    buffer_.append(buf, static_cast<size_t>(got));
  }
}

std::string Runner::log_tail_since(long offset) const {
  std::string text;
  const int fd = ::open(log_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  struct stat sb {};
  ::fstat(fd, &sb);
  const long start = std::max(offset, static_cast<long>(sb.st_size) - 4096);
  if (start < sb.st_size) {
    text.resize(static_cast<size_t>(sb.st_size - start));
    const ssize_t n = ::pread(fd, text.data(), text.size(), start);
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  ::close(fd);
  // The last non-empty line says most (abort messages, TORCH_CHECK failures).
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const auto nl = text.rfind('\n');
  if (nl != std::string::npos) text.erase(0, nl + 1);
  if (text.size() > 300) text = text.substr(text.size() - 300);
  return text;
}

CaseResult Runner::run(const std::string& id, double timeout_s, bool time) {
  CaseResult r;
  r.id = id;
  if (pid_ < 0) start();
  struct stat sb {};
  const long offset = ::fstat(log_fd_, &sb) == 0 ? static_cast<long>(sb.st_size) : 0;
  std::string line, phase;
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  const auto left = [&] { return std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count()); };
  ReadResult rr = ReadResult::Eof;
  if (write_all(to_worker_, nlohmann::json(CaseRequest{id, time}).dump() + "\n")) {
    // Phase lines come first, then the result; the timeout covers them all.
    for (;;) {
      rr = read_line(left(), &line);
      if (rr != ReadResult::Line) break;
      try {
        std::string p = parse_phase_message(line);
        if (p.empty()) break;
        phase = std::move(p);
      } catch (const ProtocolError& e) {
        r.status = Status::Error;
        r.message = e.what();
        stop();
        return r;
      }
    }
  }
  // A crash or timeout outside the target's own run is mpscheck's failure, not the target's.
  const auto charge = [&](CaseResult& c) {
    c.phase = phase;
    if (phase_is_target(phase)) return;
    const std::string what = c.status == Status::Timeout ? "did not finish" : "crashed";
    c.status = Status::Error;
    c.message = fmt::format(
        "mpscheck's own run {} in its {} phase, not in the target's run (no verdict on the "
        "target): {}",
        what, phase, c.message);
  };
  if (rr == ReadResult::Line) {
    try {
      r = parse_result_message(line, id);
      // A poisoned device never runs another case; on an accelerator no failure is trusted to have
      // left the device clean (checks/errors.hpp).
      if (needs_fresh_worker(r.status, r.message, options_.fresh_worker_after_error)) stop();
      return r;
    } catch (const ProtocolError& e) {
      r.status = Status::Error;
      r.message = e.what();
      stop();
      return r;
    }
  }
  int st = 0;
  if (rr == ReadResult::Eof) {
    // Usually it died; if it only closed its result pipe, it is killed after a short grace.
    const bool reaped = finish(options_.exit_grace_s, &st);
    r.status = Status::Crash;
    if (!reaped) {
      r.message = fmt::format(
          "the worker closed its result pipe and did not die within {:g} s of SIGKILL "
          "(stuck in the kernel?); it was abandoned",
          options_.kill_wait_s);
    } else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
      r.signal = "SIGKILL";
      r.message = "the worker closed its result pipe and was killed (SIGKILL) while running this case";
    } else {
      if (WIFSIGNALED(st))
        r.signal = signal_name(WTERMSIG(st)) ? signal_name(WTERMSIG(st)) : std::to_string(WTERMSIG(st));
      r.message = fmt::format("the worker died from {} while running this case", describe_wait_status(st));
    }
    const std::string tail = log_tail_since(offset);
    if (!tail.empty()) r.message += "; last output: " + tail;
    charge(r);
    return r;
  }
  const bool reaped = finish(0, &st);
  if (rr == ReadResult::Interrupted) {
    r.status = Status::Skip;
    r.message = "interrupted before the case finished";
    return r;
  }
  r.status = Status::Timeout;
  r.message = fmt::format("no result within {:g} s; the worker was killed (raise --timeout if the case is just slow)",
                          timeout_s);
  if (!reaped)
    r.message += fmt::format("; it did not die within {:g} s of SIGKILL (stuck in the kernel?) and was abandoned",
                             options_.kill_wait_s);
  charge(r);
  return r;
}

}  // namespace mpscheck
