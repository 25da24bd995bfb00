#include "reports/run_listener.hpp"

namespace mpscheck {

void RunListeners::run_started(const RunStart& start) {
  for (RunListener* l : listeners_) l->run_started(start);
}

void RunListeners::case_started(size_t position, size_t total, const std::string& id) {
  for (RunListener* l : listeners_) l->case_started(position, total, id);
}

void RunListeners::case_finished(size_t position, size_t total, const CaseResult& result) {
  for (RunListener* l : listeners_) l->case_finished(position, total, result);
}

void RunListeners::run_ended(const ReportContext& report) {
  for (RunListener* l : listeners_) l->run_ended(report);
}

}  // namespace mpscheck
