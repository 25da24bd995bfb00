// What the worker keeps for the case it runs: the phase it is in and the warnings it raised.
// Private to core/.
#pragma once

#include "checks/errors.hpp"
#include "checks/judge.hpp"
#include "core/execute.hpp"

#include <c10/util/Exception.h>

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mpscheck {

// The phase the case is in, for this worker thread: set by enter_phase(), reported to the host
// through ExecuteOptions::on_phase, and written into the result of a case that fails in it.
// begin_phases starts a case (nullptr ends it).
void begin_phases(const ExecuteOptions* options);
void enter_phase(const char* phase);
const std::string& current_phase();

// Records every LibTorch warning raised while a case runs, with the side it came from. Kernels
// may warn from intra-op threads, hence the lock. TORCH_WARN_ONCE warnings (the MPS fallback's
// among them) would fire once per worker process; c10's warn-always flag makes them fire in every
// case, so a fallback is seen in each case it happens in, not only in the first.
class WarningRecorder final : public c10::WarningHandler {
 public:
  WarningRecorder() : guard_(this) { always_.emplace(true); }
  void process(const c10::Warning& warning) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (paused_) return;
    std::string text = tidy_exception_message(warning.msg());
    if (side_ == Side::Target && std::find(target_.begin(), target_.end(), text) == target_.end() &&
        target_.size() < kMax)
      target_.push_back(text);
    std::string tagged = std::string(side_name()) + ": " + text;
    if (std::find(tagged_.begin(), tagged_.end(), tagged) == tagged_.end() && tagged_.size() < kMax)
      tagged_.push_back(std::move(tagged));
  }
  void set_side(Side s) {
    std::lock_guard<std::mutex> lock(mutex_);
    side_ = s;
  }
  // While timing: warn-once warnings fire once again, and nothing is recorded.
  void pause() {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = true;
    always_.reset();
  }
  std::vector<std::string> target() {
    std::lock_guard<std::mutex> lock(mutex_);
    return target_;
  }
  std::vector<std::string> all() {
    std::lock_guard<std::mutex> lock(mutex_);
    return tagged_;
  }

 private:
  static constexpr size_t kMax = 20;
  const char* side_name() const {
    switch (side_) {
      case Side::Target: return "target";
      case Side::Gold: return "float64 gold";
      default: return "reference";
    }
  }
  c10::WarningUtils::WarningHandlerGuard guard_;
  std::optional<c10::WarningUtils::WarnAlways> always_;
  std::mutex mutex_;
  bool paused_ = false;
  Side side_ = Side::Reference;
  std::vector<std::string> target_, tagged_;
};

}  // namespace mpscheck
