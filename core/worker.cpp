#include "core/worker.hpp"

#include "core/execute.hpp"
#include "core/plugin_host.hpp"
#include "core/probe.hpp"
#include "core/registry.hpp"
#include "core/target.hpp"
#include "plugins/torchscript/torchscript_workload.hpp"

#include <ATen/Parallel.h>
#include <boost/dll/runtime_symbol_info.hpp>
#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
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
  const auto cfg = nlohmann::json::parse(line);
  ExecuteOptions options;
  options.target = parse_target(cfg.at("target").get<std::string>());
  options.setup.seed = cfg.at("seed").get<std::uint64_t>();
  options.setup.quick = cfg.at("quick").get<bool>();
  options.min_time_s = cfg.at("min_time").get<double>();
  if (const int threads = cfg.value("threads", 0); threads > 0) at::set_num_threads(threads);

  PluginHost host;
  if (cfg.value("default_plugins", true)) {
    const auto dir = PluginHost::default_plugin_dir();
    if (!dir.empty()) host.load_directory(dir);
  }
  for (const auto& d : cfg.value("plugin_dirs", std::vector<std::string>{})) host.load_directory(d);
  std::vector<RegisteredWorkload> all = host.workloads();
  std::vector<std::unique_ptr<Workload>> builtin;
  if (const std::string model = cfg.value("model", ""); !model.empty())
    builtin = make_torchscript_workloads(
        torchscript_options(model, cfg.value("inputs", std::vector<std::string>{})), cfg.value("train", false));
  for (const auto& w : builtin) all.push_back({w.get(), &PluginHost::builtin_info()});
  const Registry registry(all);
  write_all(kResultFd, nlohmann::json{{"ready", true}, {"cases", registry.size()}}.dump() + "\n");

  while (std::getline(std::cin, line)) {
    const auto request = nlohmann::json::parse(line);
    const std::string id = request.at("id").get<std::string>();
    CaseResult result;
    if (id == kProbeCaseId) {
      result = run_probe(options.target);
    } else if (const RegisteredWorkload* w = registry.find(id)) {
      result = execute_case(*w, options);
    } else {
      result.id = id;
      result.status = Status::Error;
      result.message = "the worker does not know this case (plugins changed during the run?)";
    }
    if (!write_all(kResultFd, nlohmann::json(result).dump() + "\n")) return 1;
  }
  return 0;
}

// ---------------------------------------------------------------- host side

Runner::Runner(nlohmann::json worker_config, std::string log_path)
    : config_(std::move(worker_config)), log_path_(std::move(log_path)) {}

Runner::~Runner() {
  stop();
  if (log_fd_ >= 0) ::close(log_fd_);
}

void Runner::stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    reap(&st);
  }
}

void Runner::reap(int* wait_status) {
  if (to_worker_ >= 0) ::close(to_worker_);
  if (from_worker_ >= 0) ::close(from_worker_);
  to_worker_ = from_worker_ = -1;
  buffer_.clear();
  if (pid_ > 0) {
    while (::waitpid(pid_, wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

bool Runner::start(std::string* why) {
  if (log_fd_ < 0) {
    log_fd_ = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd_ < 0) {
      *why = fmt::format("cannot open the worker log {}: {}", log_path_, std::strerror(errno));
      return false;
    }
  }
  int in[2], out[2];
  if (::pipe(in) != 0 || ::pipe(out) != 0) {
    *why = fmt::format("cannot create pipes: {}", std::strerror(errno));
    return false;
  }
  for (int fd : {in[0], in[1], out[0], out[1]}) ::fcntl(fd, F_SETFD, FD_CLOEXEC);

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
  const int rc = ::posix_spawn(&pid_, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  to_worker_ = in[1];
  from_worker_ = out[0];
  if (rc != 0) {
    pid_ = -1;
    reap(nullptr);
    *why = fmt::format("cannot start the worker {}: {}", exe, std::strerror(rc));
    return false;
  }
  if (!write_all(to_worker_, config_.dump() + "\n")) {
    *why = "the worker closed its input at start-up";
  } else {
    std::string line;
    // Loading LibTorch and every plugin: generous, but not forever.
    const ReadResult rr = read_line(300, &line);
    if (rr == ReadResult::Line) return true;
    *why = rr == ReadResult::Timeout ? "the worker did not start within 300 s" : "the worker died while loading plugins";
  }
  int st = 0;
  ::kill(pid_, SIGKILL);
  reap(&st);
  return false;
}

Runner::ReadResult Runner::read_line(double timeout_s, std::string* line) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
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

std::string Runner::describe_exit(int st) const {
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

std::string Runner::log_tail_since(long offset) const {
  std::string text;
  const int fd = ::open(log_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  struct stat sb{};
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

CaseResult Runner::run(const std::string& id, double timeout_s) {
  CaseResult r;
  r.id = id;
  std::string why;
  if (pid_ < 0 && !start(&why)) {
    r.status = Status::Crash;
    r.message = why;
    return r;
  }
  struct stat sb{};
  const long offset = ::fstat(log_fd_, &sb) == 0 ? static_cast<long>(sb.st_size) : 0;
  std::string line;
  ReadResult rr = write_all(to_worker_, nlohmann::json{{"id", id}}.dump() + "\n")
                      ? read_line(timeout_s, &line) : ReadResult::Eof;
  if (rr == ReadResult::Line) {
    try {
      return nlohmann::json::parse(line).get<CaseResult>();
    } catch (const std::exception& e) {
      r.status = Status::Error;
      r.message = fmt::format("the worker sent an unreadable result ({})", e.what());
      stop();
      return r;
    }
  }
  int st = 0;
  if (rr == ReadResult::Eof) {
    reap(&st);
    r.status = Status::Crash;
    if (WIFSIGNALED(st)) r.signal = signal_name(WTERMSIG(st)) ? signal_name(WTERMSIG(st)) : std::to_string(WTERMSIG(st));
    r.message = fmt::format("the worker died from {} while running this case", describe_exit(st));
    const std::string tail = log_tail_since(offset);
    if (!tail.empty()) r.message += "; last output: " + tail;
    return r;
  }
  ::kill(pid_, SIGKILL);
  reap(&st);
  if (rr == ReadResult::Interrupted) {
    r.status = Status::Skip;
    r.message = "interrupted before the case finished";
    return r;
  }
  r.status = Status::Timeout;
  r.message = fmt::format("no result within {:g} s; the worker was killed (raise --timeout if the case is just slow)", timeout_s);
  return r;
}

}  // namespace mpscheck
