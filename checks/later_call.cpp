#include "checks/later_call.hpp"

#include "checks/compare.hpp"
#include "checks/errors.hpp"
#include "checks/judge.hpp"
#include "checks/tolerance.hpp"
#include "checks/verdict.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mpscheck {

namespace {

// Why a case's later call is not compared at all, or empty when it is.
std::string not_compared_because(const Outputs& first) {
  for (const auto& o : first)
    if (o.name.rfind("loss/step", 0) == 0)
      return "not compared: a training case's later calls are its later steps, each compared with the "
             "reference's step, and a second call would train the network again from its first step";
  return {};
}

// The largest finite magnitude of a floating output (0 for any other).
double largest_magnitude(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0 || !(t.is_floating_point() || t.is_complex())) return 0;
  return t.detach().abs().to(at::kCPU).to(at::kDouble).nan_to_num(0, 0, 0).max().item<double>();
}

// The CPU reference's own spread between calls, by output: the largest difference between two of
// its calls (the reference instance's first and a later one), and no less than its fresh rerun
// differed by (judge_sides keeps what a second fresh instance gave differently).
std::map<std::string, double> reference_spreads(CaseHost& host, CallSides& s) {
  host.enter_phase("reference");
  const Placement cpu{c10::Device(c10::kCPU), c10::kFloat, Side::Reference};
  const bool first_known = s.reference && s.reference_first_is_its_call;
  if (!s.reference) s.reference = host.instantiate(cpu);
  const Outputs first = first_known ? s.reference_first : owned(s.reference->run(), "reference");
  const auto later = by_name(owned(s.reference->run(), "reference"));
  std::map<std::string, double> spread;
  for (const auto& o : first) {
    const auto it = later.find(o.name);
    spread[o.name] =
        it == later.end() ? std::numeric_limits<double>::infinity() : largest_difference(o.value, it->second);
  }
  if (const ReferenceRerun* rerun = host.kept_rerun())
    for (const auto& o : s.reference_first)
      if (const auto again = rerun->find(o.name); again != rerun->end() && spread.count(o.name))
        spread[o.name] = std::max(spread[o.name], largest_difference(o.value, again->second));
  return spread;
}

// What one output's later call found: nothing (the same), a finding, or why it was not compared.
struct CallFinding {
  OutputReport report;
  std::string why;  // the finding's reason, or why the output was not compared
  bool finding = false, compared = true;
};

// An output whose later call differs from its first: a finding, unless the CPU reference's own calls
// differ too, and the target's by no more than kLaterCallSpreadMultiple times theirs, in the
// target dtype's units. A reference that changes by more than its tolerance between calls is a case
// that writes its own state: its later call cannot be compared with its first.
CallFinding weigh_difference(const Workload& w, const Output& first, const Output& later, double spread,
                             c10::ScalarType dtype, CallFinding f) {
  if (spread == 0) {
    f.finding = true;
    f.why = "the CPU reference gives the same on every call";
    return f;
  }
  const Tolerance own = tolerance_for(w.family(), c10::kFloat);
  const double allowance = own.atol + own.rtol * largest_magnitude(first.value);
  if (!(spread <= allowance)) {
    f.compared = false;
    f.why = fmt::format(
        "{}: the CPU reference's own calls differ by {:.3g} there, beyond its tolerance ({:.3g}), so the case "
        "changes its inputs or state on every call",
        first.name, spread, allowance);
    return f;
  }
  const double scale = unit_roundoff(dtype) / unit_roundoff(c10::kFloat);
  const double allowed = kLaterCallSpreadMultiple * spread * std::max(scale, 1.0);
  const OutputReport within = compare_tensors(first.name, first.value, later.value, Tolerance{0, allowed});
  f.finding = !within.ok;
  f.why = f.finding ? fmt::format("the CPU reference's own calls differ by up to {:.3g} ({:.3g} allowed here)", spread,
                                  allowed)
                    : fmt::format(
                          "{} within the CPU reference's own spread between calls (up to {:.3g}; {:.3g} "
                          "allowed here)",
                          first.name, spread, allowed);
  return f;
}

// The finding's message: which call, which output, by how much and where.
std::string finding_text(int call, const CallFinding& f) {
  const OutputReport& o = f.report;
  std::string what;
  if (o.numel > 0 && o.mismatches > 0 && o.rule == Rule::Tolerance)
    what = fmt::format(
        "{} of {} elements differ, by up to {:.3g} (max rel {:.3g}; there call 1 gave {:.6g}, call {} {:.6g}); first "
        "at {}",
        o.mismatches, o.numel, o.max_abs, o.max_rel, o.reference_value, call, o.target_value,
        index_string(o.first_mismatch, o.shape));
  if (!o.note.empty()) what += (what.empty() ? "" : "; ") + o.note;
  return fmt::format("call {} differs from call 1 in {}: {}; {}", call, o.name, what, f.why);
}

// One output's later call against its first, as the judge compares that output with the
// reference: exactly, or for a statistic by the first call's sampling error and for an index by what
// it selects. A statistic or an index that differs is a finding (`finding`); so is an output the
// later call lacks. Other values that differ are left for weigh_difference. `why` says how a
// statistic or an index that differs in value agreed.
CallFinding compare_calls(const Output& first, const Output* later, c10::ScalarType dtype) {
  CallFinding f;
  if (!later) {
    f.report.name = first.name;
    f.report.ok = false;
    f.report.note = "the later call did not give this output";
    f.finding = true;
    return f;
  }
  f.report = compare_tensors(first.name, first.value, later->value, Tolerance{0, 0});
  if (f.report.ok) return f;
  if (first.standard_error.defined()) {
    f.report = compare_statistics(first.name, first.value, later->value, first.standard_error, later->standard_error,
                                  kStatisticSigmas, 2 * unit_roundoff(dtype));
    f.finding = !f.report.ok;
    f.why = f.finding ? fmt::format("a random sample's statistics, {:.0f} standard errors of the first call's allowed",
                                    kStatisticSigmas)
                      : first.name + " by its statistics";
  } else if (later->indexes_into.defined()) {
    f.report =
        compare_index(first.name, first.value, later->value, later->indexes_into, later->index_dim, later->index_flat);
    f.finding = !f.report.ok;
    f.why = f.finding ? "an index, compared by the values it selects" : first.name + " by the values its index selects";
  }
  return f;
}

// What r.later_call says of a later call that gave no finding.
std::string later_call_summary(int call, size_t outputs, const std::vector<std::string>& agreed,
                               const std::vector<std::string>& not_compared) {
  auto joined = [](const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
    return out;
  };
  if (!not_compared.empty() && not_compared.size() == outputs)
    return fmt::format("call {} not compared with call 1: {}", call, joined(not_compared));
  std::string text = agreed.empty() ? fmt::format("call {} equals call 1", call)
                                    : fmt::format("call {} agrees with call 1: {}", call, joined(agreed));
  if (!not_compared.empty()) text += "; not compared: " + joined(not_compared);
  return text;
}

// Clears what timing recorded: the speed of a wrong answer means nothing.
void drop_times(CaseResult& r) {
  r.reference_time.reset();
  r.target_time.reset();
  r.speedup = 0;
  r.speed_class = SpeedClass::None;
  r.speed_note.clear();
}

}  // namespace

void judge_later_call(const Workload& w, CaseHost& host, CallSides& s, c10::ScalarType dtype, CaseResult& r) {
  if (std::string why = not_compared_because(s.target_first); !why.empty()) {
    r.later_call = why;
    return;
  }
  host.enter_phase("target");
  Outputs later_outputs;
  try {
    later_outputs = owned(s.target.run(), "target");
  } catch (...) {
    r.message = fmt::format("call {} raised: {}", s.target.calls(), exception_text(std::current_exception()));
    r.status = classify_exception(r.message);
    r.phase = "target";
    r.later_call = fmt::format("call {} raised", s.target.calls());
    drop_times(r);
    return;
  }
  const int call = s.target.calls();
  const auto later = outputs_by_name(later_outputs);
  std::optional<std::map<std::string, double>> spreads;  // the reference's, measured once if needed
  std::vector<std::string> agreed, not_compared;
  for (const auto& first : s.target_first) {
    if (w.is_random() && !first.standard_error.defined()) {
      not_compared.push_back(first.name + ": a random sample with no statistics to compare");
      continue;
    }
    const auto it = later.find(first.name);
    CallFinding f = compare_calls(first, it == later.end() ? nullptr : it->second, dtype);
    if (f.report.ok && f.why.empty()) continue;  // the same values
    if (f.report.ok) {
      agreed.push_back(f.why);
      continue;
    }
    if (!f.finding) {
      if (!spreads) spreads = reference_spreads(host, s);
      const auto spread = spreads->find(first.name);
      f = weigh_difference(w, first, *it->second,
                           spread == spreads->end() ? std::numeric_limits<double>::infinity() : spread->second, dtype,
                           f);
    }
    if (f.finding) {
      r.status = Status::Mismatch;
      r.attribution = Fragile::Target;
      r.message = finding_text(call, f);
      r.later_call = fmt::format("call {} differs from call 1 in {}", call, first.name);
      drop_times(r);
      return;
    }
    (f.compared ? agreed : not_compared).push_back(f.why);
  }
  r.later_call = later_call_summary(call, s.target_first.size(), agreed, not_compared);
}

}  // namespace mpscheck
