#include "core/case_steps.hpp"

#include <ATen/Parallel.h>

namespace mpscheck {

namespace {
thread_local const ExecuteOptions* t_options = nullptr;
thread_local std::string t_phase;
}  // namespace

void begin_phases(const ExecuteOptions* options) {
  t_options = options;
  t_phase.clear();
}

void enter_phase(const char* phase) {
  if (t_phase == phase) return;
  t_phase = phase;
  if (t_options && t_options->verdict_threads > 0 && t_options->timing_threads > 0) {
    const int want = t_phase == "timing" ? t_options->timing_threads : t_options->verdict_threads;
    if (at::get_num_threads() != want) at::set_num_threads(want);
  }
  if (t_options && t_options->on_phase) t_options->on_phase(t_phase);
}

const std::string& current_phase() { return t_phase; }

}  // namespace mpscheck
