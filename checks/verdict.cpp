#include "checks/verdict.hpp"

#include "checks/errors.hpp"
#include "checks/rule_book.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <cmath>

namespace mpscheck {

namespace {

// What the plain comparison says of one output that failed it: the verdict's first words.
std::string mismatch_lead(const OutputReport& o) {
  if (!o.note.empty() && (o.numel == 0 || o.mismatches == 0)) return fmt::format("{}: {}", o.name, o.note);
  std::string lead = fmt::format(
      "{}: {} of {} elements outside tolerance, max abs error {:.3g} (max rel {:.3g}); first at {}: reference "
      "{:.6g}, target {:.6g}",
      o.name, o.mismatches, o.numel, o.max_abs, o.max_rel, index_string(o.first_mismatch, o.shape), o.reference_value,
      o.target_value);
  if (!o.note.empty()) lead += "; " + o.note;
  return lead;
}

}  // namespace

Verdict judge_outputs(const std::vector<OutputReport>& outputs) {
  Verdict v;
  const OutputReport* first_nan = nullptr;
  const OutputReport* first_bad = nullptr;
  for (const auto& o : outputs) {
    const bool target_nonfinite = o.nan_target + o.inf_target > o.nan_reference + o.inf_reference;
    if (!o.ok && target_nonfinite && !first_nan) first_nan = &o;
    if (!o.ok && !first_bad) first_bad = &o;
  }
  if (first_nan) {
    v.status = Status::Nan;
    v.output = first_nan->name;
    v.message =
        fmt::format("{}: target has {} NaN and {} Inf where the reference has {} and {}", first_nan->name,
                    first_nan->nan_target, first_nan->inf_target, first_nan->nan_reference, first_nan->inf_reference);
    // A loss that blows up drifts first: name where it left tolerance (the seeds' VAE went
    // 550 -> 4705 -> 1.8e8 -> NaN), not only where it stopped being finite.
    if (first_bad != first_nan && first_bad->mismatches > 0)
      v.message += fmt::format("; it first left tolerance at {}: reference {:.6g}, target {:.6g}", first_bad->name,
                               first_bad->reference_value, first_bad->target_value);
  } else if (!first_bad && !outputs.empty() &&
             std::all_of(outputs.begin(), outputs.end(), [](const OutputReport& o) { return o.not_judged; })) {
    // Nothing was judged: a pass would claim what no comparison showed.
    v.status = Status::Skip;
    v.output = outputs.front().name;
    v.message = fmt::format("{}: {}", outputs.front().name, outputs.front().note);
  } else if (first_bad) {
    v.status = Status::Mismatch;
    v.output = first_bad->name;
    v.message = mismatch_lead(*first_bad);
  }
  return v;
}

namespace {

// The target is NaN/Inf where the CPU's own run in the dtype is NaN/Inf too, at most of the
// positions, in every output it fails: the finding stands (that is what the dtype computes here),
// but it is the dtype's, and a bug filed against the target would be wrong. Says so and returns true.
bool dtype_breaks_too(const std::vector<OutputAttribution>& failing, Verdict& v, Fragile& attribution) {
  const auto shared = [](const OutputAttribution& f) {
    const Attribution& a = f.attribution;
    return a.witnessed && a.target_nonfinite > 0 && 2 * a.witness_nonfinite >= a.target_nonfinite;
  };
  const OutputAttribution* dtype_side = nullptr;
  for (const auto& f : failing)
    if (shared(f) && (!dtype_side || f.output->name == v.output)) dtype_side = &f;
  if (!dtype_side || !std::all_of(failing.begin(), failing.end(), [&](const OutputAttribution& f) {
        return f.attribution.target_ok || f.attribution.chaotic || shared(f);
      }))
    return false;
  attribution = Fragile::Dtype;
  const Attribution& a = dtype_side->attribution;
  v.message += fmt::format(
      "; {}: the CPU's own {} run is NaN/Inf too at {} of the {} position(s) where the target is and float32 is "
      "not: {} itself breaks here, on the CPU as on the target, so this is the dtype's hazard, not a target bug",
      dtype_side->output->name, a.dtype, a.witness_nonfinite, a.target_nonfinite, a.dtype);
  return true;
}

// The output the plain comparison led with was forgiven (honest rounding, chaos): the finding, and
// the figures quoted after it, are `quoted`'s, so a mismatch leads with that one.
void lead_with(const std::vector<OutputAttribution>& failing, const OutputReport& quoted, Verdict& v) {
  const auto lead = std::find_if(failing.begin(), failing.end(),
                                 [&](const OutputAttribution& f) { return f.output->name == v.output; });
  if (v.status != Status::Mismatch || lead == failing.end() ||
      !(lead->attribution.target_ok || lead->attribution.chaotic))
    return;
  v.output = quoted.name;
  v.message = mismatch_lead(quoted);
}

// Whether float32's own error against float64 is comparable to the target's on the outputs that
// passed by float64 (at least kFloat32Comparable of it, RMS: checks/rule_book.hpp): only then is
// float32 the fragile side.
bool float32_comparable(const std::vector<OutputAttribution>& failing) {
  return std::all_of(failing.begin(), failing.end(), [](const OutputAttribution& f) {
    const Attribution& a = f.attribution;
    return !a.measured || a.rmse_reference >= kFloat32Comparable * a.rmse_target;
  });
}

// The training-state output nearest its allowance, for a pass's message: which comparison cleared
// it and by how much (the test it came nearest failing, and its figures).
std::string training_state_margin(const std::vector<OutputAttribution>& failing) {
  const OutputAttribution* nearest = nullptr;
  auto margin = [](const Attribution& a) {
    return std::max({a.structure.scatter_excess, a.structure.excess, a.excess.element});
  };
  std::int64_t judged = 0, undetermined = 0;
  for (const auto& f : failing) {
    if (!f.attribution.training_state) continue;
    ++judged, undetermined += f.attribution.undetermined;
    if (!nearest || margin(f.attribution) > margin(nearest->attribution)) nearest = &f;
  }
  if (!nearest) return {};
  const Attribution& a = nearest->attribution;
  std::string closest;
  if (a.structure.scatter_excess >= std::max(a.structure.excess, a.excess.element))
    closest = fmt::format("its scatter at {:.2g} of its allowance, {}", a.structure.scatter_excess,
                          describe_scatter(a.structure));
  else if (a.structure.excess >= a.excess.element)
    closest = fmt::format("its structure at {:.2g} of its allowance, {}", a.structure.excess,
                          describe_structure(a.structure, a.dtype));
  else
    closest = fmt::format("its worst element at {:.2g} of its allowance (what the honest sides make there)",
                          a.excess.element);
  return fmt::format(
      "{} gradient or update output(s) judged against float64 in units of {} rounding, against {}: each within "
      "what honest rounding makes{}. Nearest its allowance, {}: {}",
      judged, a.dtype, a.honest,
      undetermined > 0 ? fmt::format(" ({} update elements, whose first gradient rounding leaves undetermined in "
                                     "sign, judged as the honest side's)",
                                     undetermined)
                       : std::string(),
      nearest->output->name, closest);
}

// A pass by float64: which side explains the error. float32 is the fragile side only where its own
// error is comparable to the target's.
std::string pass_message(const std::vector<OutputAttribution>& failing) {
  if (std::string state = training_state_margin(failing); !state.empty())
    return "outside the plain tolerance, but " + state;
  const auto witnessed =
      std::find_if(failing.begin(), failing.end(), [](const OutputAttribution& f) { return f.attribution.witnessed; });
  if (witnessed != failing.end())
    return "outside the plain tolerance, but as close to float64 as float32 or the CPU's own " +
           witnessed->attribution.dtype + " run: honest " + witnessed->attribution.dtype + " rounding, not the target";
  if (float32_comparable(failing))
    return "outside the plain tolerance, but as close to float64 as float32 itself is: float32 is the fragile side "
           "here";
  const auto reduced = std::find_if(failing.begin(), failing.end(), [](const OutputAttribution& f) {
    return f.attribution.dtype == "float16" || f.attribution.dtype == "bfloat16";
  });
  if (reduced != failing.end())
    return "outside the plain tolerance, but within what honest " + reduced->attribution.dtype +
           " rounding gives against float64 (float32 from " + reduced->attribution.dtype +
           "-rounded inputs and the dtype's own rounding at each element), not the target";
  return "outside the plain tolerance, but within float32's own rounding against float64 at each element, not the "
         "target";
}

}  // namespace

void decide_attribution(std::vector<OutputAttribution>& failing, Verdict& v, Fragile& attribution) {
  bool all_ok = true;
  const std::string& named = v.output;
  const OutputAttribution* quoted = nullptr;
  const OutputAttribution* chaotic = nullptr;
  for (auto& f : failing) {
    const Attribution& a = f.attribution;
    if (a.measured) f.output->rmse_reference = a.rmse_reference, f.output->rmse_target = a.rmse_target;
    if (a.target_ok) continue;
    if (a.chaotic) {
      if (!chaotic) chaotic = &f;
      continue;
    }
    all_ok = false;
    if (a.measured && (!quoted || (f.output->name == named && quoted->output->name != named))) quoted = &f;
  }
  if (all_ok && chaotic) {
    // Nothing failed that a one-unit change of the CPU's own run does not move as far: not judged.
    const Attribution& a = chaotic->attribution;
    const auto count =
        std::count_if(failing.begin(), failing.end(), [](const OutputAttribution& f) { return f.attribution.chaotic; });
    attribution = Fragile::Unknown;
    v.status = Status::Skip;
    v.output = chaotic->output->name;
    const std::string base = a.chaos_from_target ? "float32 with every operation's result rounded to " + a.dtype
                                                 : "the CPU's own " + a.dtype + " run";
    const std::string nudged = a.chaos_from_target ? "the target's own run" : "that run";
    v.message = fmt::format(
        "not judged: {0} training of this network is chaotic on its first steps. {1} differs from {5} by {2:.3g} "
        "(RMS), and {6}, with its parameters and layers moved by one unit, differs from itself by {3:.3g}; {4} "
        "failing output(s) are so. No rule can tell an honest {0} device from a wrong one here",
        a.dtype, chaotic->output->name, a.chaos_target, a.chaos_honest, count, base, nudged);
    return;
  }
  if (all_ok && !failing.empty()) {
    attribution = Fragile::Float32;
    v.status = Status::Pass;
    v.message = pass_message(failing);
    return;
  }
  if (dtype_breaks_too(failing, v, attribution)) return;
  attribution = Fragile::Target;
  if (!quoted) return;
  const OutputReport& o = *quoted->output;
  const Attribution& a = quoted->attribution;
  lead_with(failing, o, v);
  if (a.training_state && a.structure.ok && !a.structure.scatter_ok) {
    v.message += fmt::format("; {}, {}: errors honest {} rounding does not make, the target is wrong", o.name,
                             describe_scatter(a.structure), a.dtype);
    if (a.bad_elements > 0)
      v.message += fmt::format("; {} of {}'s elements are off by more than rounding allows", a.bad_elements, o.name);
  } else if (!a.bias_ok) {
    // A systematic error: named as such, whatever the single elements look like.
    if (a.paired_failed)
      v.message += fmt::format(
          "; {}: the target is {:.2g}% too {} on average against float32 from the same {}-rounded inputs and "
          "weights, where the CPU's own {} run {} and honest rounding explains {:.2g}%: a systematic error in the "
          "target",
          o.name, 100 * std::abs(a.paired_target), a.paired_target > 0 ? "large" : "small", a.dtype, a.dtype,
          // "off by 0%" read like a missing figure where the witness gives that float32 result exactly.
          a.paired_honest > 0 ? fmt::format("is off by {:.2g}%", 100 * a.paired_honest) : "gives it exactly",
          100 * a.paired_allowed);
    else
      v.message += fmt::format(
          "; {}: the target is {:.2g}% too {} on average against float64, honest {} rounding explains {:.2g}% "
          "(float32 and the rounded-input baseline are off by {:.2g}%): a systematic error in the target",
          o.name, 100 * std::abs(a.bias_target), a.bias_target > 0 ? "large" : "small", a.dtype, 100 * a.bias_allowed,
          100 * a.bias_honest);
    if (a.bad_elements > 0)
      v.message += fmt::format("; {} of {}'s elements are off by more than rounding allows", a.bad_elements, o.name);
  } else if (!a.structure_ok) {
    v.message += fmt::format("; {}, {}: a structure honest rounding does not have, a systematic error in the target",
                             o.name, describe_structure(a.structure, a.dtype));
    if (a.bad_elements > 0)
      v.message += fmt::format("; {} of {}'s elements are off by more than rounding allows", a.bad_elements, o.name);
  } else if (!a.band_ok) {
    v.message += fmt::format(
        "; against float64, {}'s {} elements of magnitude {:.3g} to {:.3g} are off by {:.3g} (RMS), {:.2g}x what "
        "honest {} rounding gives there ({:.3g}): the target is the fragile side",
        o.name, a.band_count, a.band_low, a.band_high, a.band_target_rms, a.band_excess, a.dtype, a.band_allowed);
    if (a.bad_elements > 0)
      v.message += fmt::format("; {} of {}'s elements are off by more than rounding allows", a.bad_elements, o.name);
  } else if (a.bad_elements > 0 && std::isfinite(a.gold_value) && std::isfinite(a.target_value)) {
    v.message += fmt::format(
        "; against float64, {} of {}'s elements are off by more than float32 and the dtype's rounding allow, "
        "first at {}: target {:.6g}, float64 {:.6g} (error {:.3g}, allowed {:.3g}): the target is the fragile side",
        a.bad_elements, o.name, index_string(a.first_bad, o.shape), a.target_value, a.gold_value,
        std::abs(a.target_value - a.gold_value), a.allowed);
  } else {
    v.message +=
        fmt::format("; against float64 the target's RMSE is {:.3g}, float32's {:.3g}: the target is the fragile side",
                    a.rmse_target, a.rmse_reference);
  }
}

bool layer_diverges(const OutputReport& layer, const Attribution* attribution) {
  if (layer.ok) return false;
  return !(attribution && attribution->measured && attribution->target_ok);
}

void apply_fallback(const std::vector<std::string>& target_warnings, Verdict& v) {
  const auto it = std::find_if(target_warnings.begin(), target_warnings.end(), is_fallback_warning);
  if (it == target_warnings.end()) return;
  if (v.status == Status::Pass) {
    v.status = Status::Fallback;
    v.message = "the target ran part of this on the CPU, so it is not a target result: " + *it;
  } else {
    v.message += std::string(v.message.empty() ? "" : "; ") + "part of it ran on the CPU: " + *it;
  }
}

bool is_gradient(const std::string& output) { return output.rfind("grad/", 0) == 0 || output.rfind("grad0/", 0) == 0; }

bool is_training_state(const std::string& output) { return is_gradient(output) || is_update(output); }

std::string training_family(const std::string& output) {
  return is_gradient(output) ? "grad" : output.substr(0, output.find('/'));
}

std::string judge_training_family(std::vector<OutputAttribution>& failing, const TensorsByName& witness,
                                  const TensorsByName& nudged, const TensorsByName& target,
                                  const std::map<std::string, Tolerance>& tols, c10::ScalarType dtype,
                                  const std::string& dtype_named) {
  if (witness.empty()) return {};
  // Any measured training output that failed the plain tolerance, passed by its own rules or not:
  // an update's own rules cannot see a short step the dtype rounds away (compare.hpp), the scale can.
  const bool any = std::any_of(failing.begin(), failing.end(), [](const OutputAttribution& f) {
    return f.attribution.measured && is_training_state(f.output->name);
  });
  if (!any) return {};
  auto at = [](const TensorsByName& m, const std::string& name) {
    auto it = m.find(name);
    return it == m.end() ? at::Tensor() : it->second;
  };
  std::vector<std::pair<at::Tensor, at::Tensor>> grads, grads_nudged;
  std::vector<UpdateSides> updates, updates_nudged;
  for (const auto& [name, tol] : tols) {
    // The family is the optimizer's: a buffer's update (batch norm's statistics) keeps its own rules.
    if (!is_training_state(name) || tol.trajectory || is_state_update(name)) continue;
    if (is_gradient(name)) {
      grads.emplace_back(at(witness, name), at(target, name));
      grads_nudged.emplace_back(at(witness, name), at(nudged, name));
    } else {
      const at::Tensor param = at(witness, param_of_update(name));
      updates.push_back({at(witness, name), at(target, name), param});
      updates_nudged.push_back({at(witness, name), at(nudged, name), param});
    }
  }
  // A family scaled against the witness fails its failing outputs as a systematic error, which
  // mark_chaotic never excuses, unless the nudged witness (the same run with its parameters and
  // layers one unit away) is scaled as far: then it is chaos. A scaled update family takes back
  // what the updates' own rules passed: there the scale is the only figure that sees the step.
  // Scaled by chaos, those updates are left to mark_chaotic: a step 10% short hides in a network
  // whose nudged witness moves its updates by 28%, so the case is a skip that says so, never a pass.
  std::string note;
  auto judge = [&](bool (*member)(const std::string&), const char* what, const std::string& over, double scale,
                   double honest_scale, bool overrules) {
    const bool scaled = !std::isnan(scale) && std::abs(scale - 1) > kFamilyScale;
    if (!scaled) return;
    const bool chaos =
        !std::isnan(honest_scale) && std::abs(scale - 1) <= kChaosMultiplier * std::abs(honest_scale - 1);
    bool failed = false;
    for (auto& f : failing) {
      Attribution& a = f.attribution;
      if (!a.measured || !member(f.output->name) || (a.target_ok && !overrules)) continue;
      failed = true;
      a.scaled_by_chaos = a.target_ok && chaos;
      a.target_ok = false;
      a.systematic = !chaos;
    }
    if (!chaos && failed && note.empty())
      note = fmt::format(
          "; the target's {} are {:.3g}% {} (RMS over {}) than the CPU's own {} run's: a systematic error in "
          "the target",
          what, 100 * std::abs(scale - 1), scale > 1 ? "larger" : "smaller", over, dtype_named);
  };
  const bool have_nudged = !nudged.empty();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  judge(&is_gradient, "first-step gradients", "all of them", pooled_scale(grads),
        have_nudged ? pooled_scale(grads_nudged) : nan, false);
  auto is_parameter_update = [](const std::string& name) { return name.rfind("update/", 0) == 0; };
  judge(+is_parameter_update, "parameter updates",
        fmt::format("the elements the dtype resolves, updates of {:g} or more of its spacings", kResolvedSpacings),
        resolved_update_scale(updates, dtype), have_nudged ? resolved_update_scale(updates_nudged, dtype) : nan, true);
  return note;
}

void judge_update_scale(const TensorsByName& reference, const TensorsByName& target, c10::ScalarType dtype,
                        std::vector<OutputReport>& outputs) {
  std::vector<UpdateSides> updates;
  OutputReport* largest = nullptr;
  double largest_rms = -1;
  for (auto& o : outputs) {
    if (o.name.rfind("update/", 0) != 0) continue;
    const auto r = reference.find(o.name), t = target.find(o.name);
    const auto p = reference.find(param_of_update(o.name));
    if (r == reference.end() || t == target.end() || p == reference.end()) continue;
    updates.push_back({r->second, t->second, p->second});
    const double rms = r->second.defined() && r->second.is_floating_point() ? finite_rms(r->second) : -1;
    if (rms > largest_rms) largest_rms = rms, largest = &o;
  }
  const double scale = resolved_update_scale(updates, dtype);
  if (!largest || std::isnan(scale) || std::abs(scale - 1) <= kFamilyScale) return;
  const std::string note = fmt::format(
      "the target's parameter updates are {:.3g}% {} (RMS over all {} of them, on the elements the dtype resolves) "
      "than the reference's: a systematic error in the optimizer step or the gradients before it",
      100 * std::abs(scale - 1), scale > 1 ? "larger" : "smaller", updates.size());
  largest->ok = false;
  largest->family_finding = true;
  largest->note = largest->note.empty() ? note : largest->note + "; " + note;
}

bool mark_chaotic(std::vector<OutputAttribution>& failing, const TensorsByName& witness, const TensorsByName& nudged,
                  const TensorsByName& target, const TensorsByName* nudged_from) {
  bool any = false;
  const TensorsByName& from = nudged_from ? *nudged_from : witness;
  for (auto& f : failing) {
    Attribution& a = f.attribution;
    if (a.target_ok || !a.measured || a.systematic) continue;
    const auto w = witness.find(f.output->name), n = nudged.find(f.output->name), t = target.find(f.output->name);
    const auto b = from.find(f.output->name);
    if (w == witness.end() || n == nudged.end() || t == target.end() || b == from.end()) continue;
    const at::Tensor wv = w->second, nv = n->second, tv = t->second, bv = b->second;
    if (!wv.defined() || !nv.defined() || !tv.defined() || !bv.defined() || !wv.is_floating_point() ||
        wv.sizes() != nv.sizes() || wv.sizes() != tv.sizes() || wv.sizes() != bv.sizes() || wv.numel() == 0)
      continue;
    at::NoGradGuard no_grad;
    const at::Tensor w64 = wv.detach().to(at::kCPU, at::kDouble), t64 = tv.detach().to(at::kCPU, at::kDouble);
    const at::Tensor n64 = nv.detach().to(at::kCPU, at::kDouble), b64 = bv.detach().to(at::kCPU, at::kDouble);
    // A target with a non-finite element the witness lacks is never chaos (finite_rms skips them).
    if ((t64.isfinite().logical_not() & w64.isfinite()).any().item<bool>()) continue;
    const double honest = finite_rms(n64 - b64);
    const double off = finite_rms(t64 - w64);
    // Chaos scatters; it does not scale. The target's projection on the witness (1: no scale) may be
    // off 1 by the family's kFamilyScale, or by kChaosMultiplier times the nudged run's, not more:
    // an optimizer step 10% short stays a finding however far sign flips carry single elements.
    const at::Tensor finite = t64.isfinite() & w64.isfinite() & n64.isfinite() & b64.isfinite();
    const at::Tensor wf = at::where(finite, w64, 0.0), bf = at::where(finite, b64, 0.0);
    const double ww = (wf * wf).sum().item<double>(), bb = (bf * bf).sum().item<double>();
    const double scale_target = ww > 0 ? (at::where(finite, t64, 0.0) * wf).sum().item<double>() / ww : 1.0;
    const double scale_honest = bb > 0 ? (at::where(finite, n64, 0.0) * bf).sum().item<double>() / bb : 1.0;
    const bool scatters_as_chaos =
        !(std::abs(1 - scale_target) > std::max(kFamilyScale, kChaosMultiplier * std::abs(1 - scale_honest))) &&
        honest > 0 && std::isfinite(off) && off <= kChaosMultiplier * honest;
    // An update its own rules passed, taken back by its family's scale, which chaos explains: nothing
    // of it is left to test.
    if (!scatters_as_chaos && !a.scaled_by_chaos) continue;
    a.chaotic = true;
    a.chaos_from_target = nudged_from != nullptr;
    a.chaos_target = off;
    a.chaos_honest = honest;
    any = true;
  }
  return any;
}

}  // namespace mpscheck
