// A case's judgement once both sides have run: every output by its rule, the float64 attribution
// of what fails, and the layer a failing model first diverges at.
#include "checks/judge.hpp"

#include "checks/compare.hpp"
#include "checks/errors.hpp"
#include "checks/honest_runs.hpp"
#include "checks/later_call.hpp"
#include "checks/memory.hpp"
#include "checks/rule_book.hpp"
#include "checks/structure.hpp"
#include "checks/training_state.hpp"
#include "checks/verdict.hpp"

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mpscheck {

std::string exception_text(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const c10::Error& e) {
    return tidy_exception_message(e.what_without_backtrace());
  } catch (const std::exception& e) {
    return tidy_exception_message(e.what());
  } catch (...) {
    return "unknown exception (not derived from std::exception)";
  }
}

std::map<std::string, at::Tensor> by_name(const Outputs& outs) {
  std::map<std::string, at::Tensor> m;
  for (const auto& o : outs) m[o.name] = o.value;
  return m;
}

std::map<std::string, const Output*> outputs_by_name(const Outputs& outs) {
  std::map<std::string, const Output*> m;
  for (const auto& o : outs) m[o.name] = &o;
  return m;
}

Outputs owned(Outputs outs, const char* side) {
  std::set<std::string> names;
  for (auto& o : outs) {
    if (!names.insert(o.name).second)
      throw std::runtime_error(
          fmt::format("the {} gave two outputs named {}; each output needs its own name", side, o.name));
    if (o.value.defined()) o.value = o.value.detach().clone();
    if (o.indexes_into.defined()) o.indexes_into = o.indexes_into.detach().clone();
    if (o.standard_error.defined()) o.standard_error = o.standard_error.detach().clone();
  }
  return outs;
}

namespace {

// float16 and bfloat16: the dtypes the reduced-precision rules, baseline and witness are for.
bool is_reduced(c10::ScalarType dtype) { return dtype == c10::kHalf || dtype == c10::kBFloat16; }

// Runs the CPU float64 gold and decides, for every failing output, whether the target or float32
// itself is the fragile side (checks/verdict.hpp). Turns the verdict into pass when float32 is.
void attribute(const Workload& w, CaseHost& host, const Outputs& ref_out,
               const std::map<std::string, at::Tensor>& target_by_name, c10::Device device, c10::ScalarType dtype,
               const std::map<std::string, Tolerance>& tols, CaseResult& r, Verdict& v) {
  std::map<std::string, at::Tensor> gold;
  host.enter_phase("float64");
  try {
    gold = host.gold();
  } catch (...) {
    v.message += "; no float64 gold run to attribute it (" + exception_text(std::current_exception()) + ")";
    r.attribution = Fragile::Target;
    return;
  }
  std::map<std::string, at::Tensor> ref_by_name = by_name(ref_out);
  const bool state_fails = std::any_of(r.outputs.begin(), r.outputs.end(), [&](const OutputReport& o) {
    const auto tol = tols.find(o.name);
    return !o.ok && tol != tols.end() && tol->second.training_state;
  });
  const HonestRuns honest = honest_runs(host, device, dtype, state_fails);
  const auto& [rounded, witness, emulated] = honest;
  // A float32 network on an accelerator: the reference is already the CPU's own run in that dtype,
  // so it is the base chaos is measured from (mark_chaotic), as the witness is for float16/bfloat16.
  // On a CPU target the rounded-operation baseline is that base, and the nudged run, the target's
  // own code one unit away, measures chaos from the target itself.
  const bool float32_accelerator = dtype == c10::kFloat && device.type() != c10::kCPU;
  const bool cpu_chaos = device.type() == c10::kCPU && witness.empty() && !emulated.empty();
  const std::map<std::string, at::Tensor>& chaos_base = cpu_chaos                                ? emulated
                                                        : witness.empty() && float32_accelerator ? ref_by_name
                                                                                                 : witness;
  std::vector<OutputAttribution> failing;
  for (auto& o : r.outputs) {
    if (o.ok) continue;
    OutputAttribution f{&o, {}};
    auto g = gold.find(o.name);
    auto t = target_by_name.find(o.name);
    // Exact, index, statistics, dtype and family findings are contracts float64 cannot excuse. An exact
    // (integer/bool) output of a float16/bfloat16 target may only equal, exactly, what float32
    // gives from inputs rounded to that dtype: a comparison of two values that round to the same.
    const bool by_value = o.rule == Rule::Tolerance && !o.dtype_differs && !o.family_finding;
    auto rd = rounded.find(o.name);
    if (o.rule == Rule::Exact && rd != rounded.end() && t != target_by_name.end() &&
        compare_tensors(o.name, rd->second, t->second, Tolerance{0, 0}).ok) {
      f.attribution.target_ok = true;  // no figures: nothing to take an RMSE of
      o.note = "equal to the float32 result from inputs rounded to " + r.dtype;
    } else if (by_value && g != gold.end() && t != target_by_name.end()) {
      auto wd = witness.find(o.name);
      auto ed = emulated.find(o.name);
      // An update's rounding is its parameter's (or buffer's), whose difference it is.
      auto md = is_update(o.name) ? ref_by_name.find(param_of_update(o.name)) : ref_by_name.end();
      std::int64_t undetermined = 0;
      const at::Tensor judged =
          tols.at(o.name).training_state
              ? update_as_judged(o.name, t->second, gold, target_by_name, {&witness, &emulated, &rounded}, undetermined)
              : t->second;
      f.attribution = attribute_with_gold(
          g->second, ref_by_name[o.name], judged, dtype, tols.at(o.name),
          rd == rounded.end() ? at::Tensor() : rd->second, wd == witness.end() ? at::Tensor() : wd->second,
          ed == emulated.end() ? at::Tensor() : ed->second, md == ref_by_name.end() ? at::Tensor() : md->second);
      f.attribution.undetermined = undetermined;
    }
    failing.push_back(f);
  }
  // A witnessed network that fails: the nudged witness (the CPU's own run, parameters and layers one unit away)
  // says how far chaos alone carries it, for the family's scale and for each output.
  std::map<std::string, at::Tensor> nudged;
  if (w.kind() == Kind::Model && !chaos_base.empty() &&
      std::any_of(failing.begin(), failing.end(), [](const OutputAttribution& f) { return f.attribution.measured; })) {
    try {
      Placement p{c10::Device(c10::kCPU), dtype, Side::Reference};
      p.nudge_parameters = true;
      nudged = by_name(host.run(p, "nudged CPU witness"));
    } catch (...) {
      // No nudged witness (the CPU cannot run it): the case is judged without it.
    }
  }
  // A witnessed training case's gradients and updates are judged as a family (checks/verdict.hpp).
  const std::string family = w.kind() == Kind::Model
                                 ? judge_training_family(failing, witness, nudged, target_by_name, tols, dtype, r.dtype)
                                 : std::string();
  if (!nudged.empty()) {
    if (is_reduced(dtype))
      systematic_unless_nudged_too(failing, gold, ref_by_name, rounded, chaos_base, nudged, tols, dtype);
    mark_chaotic(failing, chaos_base, nudged, target_by_name, cpu_chaos ? &target_by_name : nullptr);
  }
  decide_attribution(failing, v, r.attribution);
  if (v.status == Status::Mismatch || v.status == Status::Nan) v.message += family;
}

// A trace's layer outputs by (name, call): a network may run one layer several times in a pass
// (DCGAN's D scores real images, then fakes twice), and only its k-th call on one side is its
// k-th call on the other.
std::map<std::pair<std::string, int>, at::Tensor> layers_by_call(const Outputs& layers) {
  std::map<std::pair<std::string, int>, at::Tensor> m;
  std::map<std::string, int> calls;
  for (const auto& o : layers) m[{o.name, calls[o.name]++}] = o.value;
  return m;
}

// One side's layer trace, by (name, call); empty when that side cannot be traced (no kernel for
// the dtype on the CPU, say), and the rule then stands on the witnesses it has.
std::map<std::pair<std::string, int>, at::Tensor> trace_or_empty(CaseHost& host, const Placement& where) {
  try {
    return layers_by_call(host.trace(where));
  } catch (...) {
    return {};
  }
}

// Names the first traced layer whose output diverges between reference and target, judged like
// the case itself: plain tolerance, then the float64 attribution with the same honest witnesses
// (for float16/bfloat16, float32 from rounded inputs and weights with every layer's output
// rounded, and on an accelerator the CPU's own run in that dtype), so a report points at an op
// and never at a layer whose error is honest rounding.
void localise(const Workload& w, CaseHost& host, c10::Device device, c10::ScalarType dtype, const Tolerance& tol,
              CaseResult& r) {
  Outputs ref_layers, tgt_layers;
  host.enter_phase("localisation");
  try {
    ref_layers = host.trace(Placement{c10::Device(c10::kCPU), c10::kFloat, Side::Reference});
    if (ref_layers.empty()) return;
    tgt_layers = host.trace(Placement{device, dtype, Side::Target});
  } catch (...) {
    r.message += "; layer tracing failed (" + exception_text(std::current_exception()) + ")";
    return;
  }
  const auto target_by_call = layers_by_call(tgt_layers);
  // The float64 trace and the honest witnesses, traced once, at the first layer that needs them.
  bool witnesses_traced = false;
  std::map<std::pair<std::string, int>, at::Tensor> gold_by_call, rounded_by_call, witness_by_call;
  auto trace_witnesses = [&] {
    if (witnesses_traced) return;
    witnesses_traced = true;
    gold_by_call = trace_or_empty(host, Placement{c10::Device(c10::kCPU), c10::kDouble, Side::Gold});
    if (is_reduced(dtype)) {
      Placement p{c10::Device(c10::kCPU), c10::kFloat, Side::Reference};
      p.round_inputs_to = dtype;
      rounded_by_call = trace_or_empty(host, p);
      if (device.type() != c10::kCPU)
        witness_by_call = trace_or_empty(host, Placement{c10::Device(c10::kCPU), dtype, Side::Reference});
    }
  };
  auto find = [](const std::map<std::pair<std::string, int>, at::Tensor>& m, const std::pair<std::string, int>& k) {
    auto it = m.find(k);
    return it == m.end() ? at::Tensor() : it->second;
  };
  std::map<std::string, int> calls;  // of each layer so far in the reference's trace
  for (const auto& layer : ref_layers) {
    const int call = calls[layer.name]++;
    auto t = target_by_call.find({layer.name, call});
    if (t == target_by_call.end()) continue;
    OutputReport rep = compare_tensors(layer.name, layer.value, t->second, tol, dtype);
    if (rep.ok) continue;
    Attribution a;
    if (w.has_gold() && rep.rule == Rule::Tolerance) {
      trace_witnesses();
      const std::pair<std::string, int> key{layer.name, call};
      if (const at::Tensor g = find(gold_by_call, key); g.defined()) {
        a = attribute_with_gold(g, layer.value, t->second, dtype, tol, find(rounded_by_call, key),
                                find(witness_by_call, key));
        if (a.measured) rep.rmse_reference = a.rmse_reference, rep.rmse_target = a.rmse_target;
      }
    }
    if (!layer_diverges(rep, &a)) continue;  // an honest side is as far from float64 here
    r.first_diverging_layer = layer.name;
    r.first_diverging_layer_call = call + 1;
    const int runs =
        std::count_if(ref_layers.begin(), ref_layers.end(), [&](const Output& o) { return o.name == layer.name; });
    r.message += fmt::format("; first diverging layer: {}{} ({} of {} elements, max abs error {:.3g})", layer.name,
                             runs > 1 ? fmt::format(" (call {} of {})", call + 1, runs) : std::string(), rep.mismatches,
                             rep.numel, rep.max_abs);
    r.layer = std::move(rep);
    return;
  }
  r.message +=
      "; every traced layer agrees in the first pass from the initial weights (forward, and backward for "
      "training): the divergence builds up over training steps (the optimizer, or error that compounds)";
}

// What a second, fresh reference instance built from the same seed gives for every output it gives
// differently (empty for random workloads, which are compared by statistics). A fresh instance,
// not a second run() of the first: a model that normalises its input in place would otherwise
// differ from itself by construction. A re-run that throws measures nothing.
ReferenceRerun reference_rerun(const Workload& w, CaseHost& host, const Outputs& ref_out) {
  ReferenceRerun rerun;
  if (w.is_random()) return rerun;
  try {
    const auto again = by_name(host.run(Placement{c10::Device(c10::kCPU), c10::kFloat, Side::Reference}, "reference"));
    for (const auto& o : ref_out) {
      auto it = again.find(o.name);
      if (it == again.end() || !o.value.defined() || !it->second.defined()) continue;
      if (!compare_tensors(o.name, o.value, it->second, Tolerance{0, 0}).ok) rerun[o.name] = it->second;
    }
  } catch (...) {
  }
  return rerun;
}

// A reference that differs from itself by orders of magnitude more than the case's tolerance is
// not "slightly nondeterministic" (reduction order, atomics): it is not a reference at all, and no
// element of it can be trusted to judge a target by. Empty when every spread is small.
std::string nondeterminism_error(const Outputs& ref_out, const ReferenceRerun& rerun, const Tolerance& tol) {
  for (const auto& o : ref_out) {
    auto it = rerun.find(o.name);
    if (it == rerun.end() || !o.value.defined()) continue;
    const double spread = largest_difference(o.value, it->second);
    double largest = 0;
    if (o.value.numel() > 0 && (o.value.is_floating_point() || o.value.is_complex()))
      largest = o.value.detach().abs().to(at::kDouble).nan_to_num(0, 0, 0).max().item<double>();
    const double allowance = tol.atol + tol.rtol * largest;
    if (!(spread <= kNondeterministicReferenceMultiple * allowance))
      return fmt::format(
          "the CPU reference is not deterministic: output {} differs by up to {:.3g} between two "
          "fresh reference instances from the same seed, {:.0f}x the tolerance ({:.3g}); no "
          "element of it can judge a target (does the case read global random state or "
          "uninitialised memory?)",
          o.name, spread, allowance > 0 ? spread / allowance : INFINITY, allowance);
  }
  return {};
}

// The reference a target's output is compared with. Where the reference's two runs disagree, the
// reference could have been anything between them: a target element inside that interval is
// compared with itself, one outside it with the nearer end. Everywhere else (the runs agree) it
// is the reference itself, so a wrong element there is as wrong as without a rerun; so is a NaN
// target element (no interval holds it). The first run when the runs cannot be paired element by
// element, or are not real floating point (an index is exact, and int64 does not pass through a
// double unchanged).
at::Tensor reference_near(const at::Tensor& reference, const at::Tensor& again, const at::Tensor& target) {
  if (!reference.defined() || !again.defined() || !target.defined() || !reference.is_floating_point() ||
      target.is_complex() || again.sizes() != reference.sizes() || again.scalar_type() != reference.scalar_type() ||
      target.sizes() != reference.sizes())
    return reference;
  const at::Tensor t = target.detach().to(at::kCPU).to(at::kDouble);
  const at::Tensor first = reference.detach().to(at::kDouble), second = again.detach().to(at::kCPU).to(at::kDouble);
  const at::Tensor inside = (t >= at::minimum(first, second)) & (t <= at::maximum(first, second));
  const at::Tensor nearer = at::where((t - second).abs() < (t - first).abs(), second, first);
  return at::where(inside, t, nearer).to(reference.scalar_type());
}

// The note a result gets when its reference differed from itself: which outputs, and by how much.
std::string rerun_note(const Outputs& ref_out, const ReferenceRerun& rerun) {
  std::string widest;
  double most = -1;
  for (const auto& o : ref_out) {
    auto it = rerun.find(o.name);
    if (it == rerun.end()) continue;
    const double spread = largest_difference(o.value, it->second);
    if (spread > most) most = spread, widest = o.name;
  }
  return fmt::format(
      "the CPU reference differs from itself between runs in {} output{} (the most, {}, by {:.3g}): "
      "where its two runs disagree, an element is compared with the nearer end of the two; no tolerance is "
      "widened",
      rerun.size(), rerun.size() == 1 ? "" : "s", widest, most);
}

// The structure screen in front of the float64 judge (checks/structure.hpp): an output inside the
// plain tolerance whose signed errors, against the float32 reference rounded to the dtype, bias one
// group (a slice, a block, a band of magnitudes) goes to float64, which decides.
void screen_structure(const at::Tensor& reference, const at::Tensor& target, c10::ScalarType dtype,
                      const std::string& dtype_named, StructureOptions options, OutputReport& rep) {
  options.leniency = kStructure.screen_leniency;
  const StructureTest s =
      test_structure(reference.detach().to(at::kCPU, at::kDouble), target, at::Tensor(), at::Tensor(), dtype, options);
  if (!s.scatter_ok) {
    rep.ok = false;
    rep.note = fmt::format(
        "{} ({} elements) is {:.2g} units of {} off (RMS) against the float32 reference, more than "
        "the screen lets pass unjudged ({:.2g})",
        s.scatter_where, s.scatter_count, s.scatter_target_units, dtype_named, s.scatter_allowed_units);
    return;
  }
  if (s.ok) return;
  rep.ok = false;
  rep.note = fmt::format(
      "{} ({} elements) is {:.2g} units of {} {} on average against the float32 reference, more than rounding in {} "
      "should give",
      s.where, s.count, std::abs(s.paired_units), dtype_named, s.paired_units < 0 ? "low" : "high", dtype_named);
}

// The screens of a float16/bfloat16 output inside the plain tolerance: a signed bias the elements
// hide, and (Tolerance::structure) a group that stands out, go to float64. `param` is an update's
// parameter (undefined otherwise).
void screen_reduced(const at::Tensor& reference, const at::Tensor& target, const Tolerance& tol, c10::ScalarType dtype,
                    const std::string& dtype_named, const at::Tensor& param, OutputReport& rep) {
  const SignedBias b = signed_bias(reference, target);
  if (std::abs(b.mean) > kBiasScreenUnits * unit_roundoff(dtype)) {
    rep.ok = false;
    rep.note = fmt::format(
        "the target is {:.2g}% too {} on average against the float32 reference "
        "(standard error {:.2g}%), more than rounding in {} should give",
        100 * std::abs(b.mean), b.mean > 0 ? "large" : "small", 100 * b.se, dtype_named);
    return;
  }
  if (!tol.structure) return;
  StructureOptions options;
  if (tol.training_state) options.floor = tol.unit_floor, options.training_state = true, options.magnitude = param;
  screen_structure(reference, target, dtype, dtype_named, options, rep);
}

}  // namespace

void judge_case(const Workload& w, CaseHost& host, const Outputs& ref_out, const Outputs& tgt_out, c10::Device device,
                c10::ScalarType dtype, const Tolerance& tol, const ReferenceRerun& rerun, CaseResult& r) {
  // Determinism: a reference that differs from itself must not be blamed on the target, and only
  // where it differs: such an element is compared with the nearer end of its two runs
  // (reference_near; no tolerance is widened, so a wrong element elsewhere is still wrong).
  std::map<std::string, Tolerance> tols;
  for (const auto& o : ref_out) {
    tols[o.name] = tol;
    if (rerun.count(o.name)) r.nondeterministic = true;
  }

  const auto target_outputs = outputs_by_name(tgt_out);
  const auto reference_outputs = outputs_by_name(ref_out);
  auto target_by_name = by_name(tgt_out);
  const double unit = 2 * unit_roundoff(dtype);
  const std::map<std::string, double> floors =
      w.kind() == Kind::Model && is_reduced(dtype) ? training_floors(ref_out) : std::map<std::string, double>();
  for (const auto& o : ref_out) {
    auto it = target_outputs.find(o.name);
    const Output* t = it == target_outputs.end() ? nullptr : it->second;
    const at::Tensor tv = t ? t->value : at::Tensor();
    const auto again = rerun.find(o.name);
    const at::Tensor reference = again == rerun.end() ? o.value : reference_near(o.value, again->second, tv);
    OutputReport rep;
    if (o.standard_error.defined())
      rep = compare_statistics(o.name, o.value, tv, o.standard_error, t ? t->standard_error : at::Tensor(),
                               kStatisticSigmas, unit);
    else if (t && t->indexes_into.defined())
      rep = compare_index(o.name, o.value, tv, t->indexes_into, t->index_dim, t->index_flat);
    else {
      // Reduced precision: the plain tolerance's atol is a few rounding units of this output's own
      // scale, and a signed bias the elements hide is screened for and sent to float64.
      const bool reduced = is_reduced(dtype);
      if (reduced) {
        tols[o.name] = scaled_to_output(tols[o.name], dtype, finite_rms(o.value), w.family(), o.name);
        tols[o.name].network = w.kind() == Kind::Model;
        // A network's training state (its gradients and updates) is judged by the training-state
        // rule (Tolerance::training_state), witnessed or not: in units of the dtype's rounding
        // against what the CPU's own run in the dtype, or on a CPU target the rounded-operation
        // baseline, gives. Its plain fast path allows a few units at the family's floor, never of
        // the output's own scale, and the screen sends any group scattered or biased to float64.
        // A buffer's update on a CPU target keeps the trajectory rule (below): LibTorch's own
        // bfloat16 batch norm moves convmixer's running mean 7% from float64, 10 to 18 units past
        // what rounding each result once gives, so no baseline is its honest side there.
        const bool state = w.kind() == Kind::Model && is_training_state(o.name) &&
                           !(is_state_update(o.name) && device.type() == c10::kCPU);
        tols[o.name].structure =
            w.kind() == Kind::Op ? rounds_once(w.family(), o.name) : device.type() != c10::kCPU || state;
        if (state) as_training_state(tols[o.name], floors, o.name, dtype, tol.atol);
        // A parameter's update is the difference of two parameters, each rounded to the dtype: it
        // carries the rounding of the parameter, not of the update (Adam moves a weight of 0.05 by
        // 1e-3, a quarter of a bfloat16 unit there). Its atol is that of the parameter's own scale.
        // An op's update of an input it writes in place (batch norm's running mean), with no witness
        // on a CPU target, carries the rounding of the value the dtype stores (a unit of a statistic
        // of 1.5 is 8% of its update of 0.1): it keeps the trajectory rule there.
        if (!state && is_state_update(o.name) && device.type() == c10::kCPU)
          tols[o.name] = as_trajectory(tols[o.name]);
        else if (is_update(o.name)) {
          const auto param = reference_outputs.find(param_of_update(o.name));
          if (param != reference_outputs.end())
            tols[o.name].atol = std::max(tols[o.name].atol,
                                         kScaleRoundingUnits * unit_roundoff(dtype) * finite_rms(param->second->value));
        }
      }
      rep = compare_tensors(o.name, reference, tv, tols[o.name], dtype);
      if (reduced && rep.ok && !tols[o.name].trajectory && tv.defined() && tv.is_floating_point() &&
          o.value.is_floating_point()) {
        const auto param =
            is_update(o.name) ? reference_outputs.find(param_of_update(o.name)) : reference_outputs.end();
        screen_reduced(reference, tv, tols[o.name], dtype, r.dtype,
                       param == reference_outputs.end() ? at::Tensor() : param->second->value, rep);
      }
    }
    if (!t) rep.note = "the target did not produce this output";
    r.outputs.push_back(std::move(rep));
  }
  // An output only the target gives is a difference too (a list that grows on the target).
  for (const auto& o : tgt_out) {
    if (reference_outputs.count(o.name)) continue;
    OutputReport rep;
    rep.name = o.name;
    rep.ok = false;
    rep.note = "the target produced this output and the reference did not";
    r.outputs.push_back(std::move(rep));
  }
  // float32 and float64 networks: the updates as a family, at the scale of the reference's own.
  if (w.kind() == Kind::Model && !is_reduced(dtype) && c10::isFloatingType(dtype))
    judge_update_scale(by_name(ref_out), target_by_name, dtype, r.outputs);
  Verdict v = judge_outputs(r.outputs);
  if ((v.status == Status::Mismatch || v.status == Status::Nan) && w.has_gold())
    attribute(w, host, ref_out, target_by_name, device, dtype, tols, r, v);
  apply_fallback(host.target_warnings(), v);
  r.status = v.status;
  r.message = v.message;
  if (r.nondeterministic) r.message += std::string(r.message.empty() ? "" : "; ") + rerun_note(ref_out, rerun);
  if (w.kind() == Kind::Model && (r.status == Status::Mismatch || r.status == Status::Nan)) {
    localise(w, host, device, dtype, tol, r);
  }
}

ReferenceRerun rerun_reference(const Workload& w, CaseHost& host, const Outputs& ref_out) {
  if (const ReferenceRerun* kept = host.kept_rerun()) return *kept;
  host.enter_phase("reference");
  ReferenceRerun rerun = reference_rerun(w, host, ref_out);
  host.keep_rerun(rerun);
  return rerun;
}

void judge_sides(const Workload& w, CaseHost& host, const Outputs& ref_out, const Outputs& tgt_out, c10::Device device,
                 c10::ScalarType dtype, const Tolerance& tol, CaseResult& r) {
  const ReferenceRerun rerun = rerun_reference(w, host, ref_out);
  host.enter_phase("comparison");
  if (ref_out.empty()) {
    // Nothing compared is nothing checked: never a pass.
    r.status = Status::Error;
    r.phase = "comparison";
    r.message = fmt::format(
        "the case has no output to compare (the target gave {}); a case that compares "
        "nothing cannot pass",
        tgt_out.empty() ? "none either" : fmt::format("{} named {}", tgt_out.size(), tgt_out.front().name));
  } else if (std::string why = nondeterminism_error(ref_out, rerun, tol); !why.empty()) {
    r.status = Status::Error;
    r.phase = "reference";
    r.nondeterministic = true;
    r.message = why;
  } else {
    judge_case(w, host, ref_out, tgt_out, device, dtype, tol, rerun, r);
  }
}

namespace {

// A float16/bfloat16 target that raised (a loss refusing the NaN its input became, say): when the
// CPU's own run in the dtype raises the same message, the error is the dtype's, as a NaN the CPU
// shares is (decide_attribution). The status and message stand; the attribution and message say so.
void witness_raises_too(CaseHost& host, c10::ScalarType dtype, CaseResult& r) {
  host.enter_phase("float64");
  try {
    host.run(Placement{c10::Device(c10::kCPU), dtype, Side::Reference}, "CPU witness");
  } catch (...) {
    if (exception_text(std::current_exception()) != r.message) return;
    r.attribution = Fragile::Dtype;
    r.message += fmt::format(
        "; the CPU's own {0} run raises the same: {0} itself breaks here, on the CPU as on the target, so this is "
        "the dtype's hazard, not a target bug",
        r.dtype);
  }
}

}  // namespace

void check_case(const Workload& w, CaseHost& host, CaseSides* sides, c10::Device device, c10::ScalarType dtype,
                const TimingPlan& timing, CaseResult& r) {
  const Tolerance tol = tolerance_for(w.family(), dtype);
  r.rtol = tol.rtol;
  r.atol = tol.atol;
  if (sides) {
    using Clock = std::chrono::steady_clock;
    const auto compare_start = Clock::now();
    try {
      judge_sides(w, host, sides->reference, sides->target, device, dtype, tol, r);
    } catch (...) {
      // Comparison, gold and localisation run after the target: their failure is not the target's.
      const std::string phase = host.current_phase();
      r.status = Status::Error;
      r.phase = phase;
      r.message =
          fmt::format("mpscheck failed in its own {} phase, after the target ran (not the target's failure): {}", phase,
                      exception_text(std::current_exception()));
    }
    r.compare_s = std::chrono::duration<double>(Clock::now() - compare_start).count();
    // Time only cases whose results are right: the speed of a wrong answer means nothing.
    r.timed = timing.budget_s > 0;
    // The reference's first call is its instance's own unless it came from the cache (the timing
    // may make an instance for a cached reference).
    CallSides calls{sides->target, CountedCalls(*sides->target_instance, 1), sides->reference,
                    sides->reference_instance, sides->reference_instance != nullptr};
    if (r.status == Status::Pass && r.timed) {
      host.enter_phase("timing");
      try {
        time_case(host, timing, device, dtype, calls.target, sides->reference_instance, r);
      } catch (...) {
        r.status = Status::Error;
        r.phase = "timing";
        r.message = "mpscheck failed while timing (not a verdict on the target's results): " +
                    exception_text(std::current_exception());
      }
    }
    // A case that passed on its first call passes only if a later one gives the same.
    if (r.status == Status::Pass) {
      try {
        judge_later_call(w, host, calls, dtype, r);
      } catch (...) {
        const std::string phase = host.current_phase();
        r.status = Status::Error;
        r.phase = phase;
        r.message = fmt::format("mpscheck failed in its own {} phase, comparing a later call with the first: {}", phase,
                                exception_text(std::current_exception()));
      }
    }
  } else if (r.status == Status::Error && r.phase == "target" && is_reduced(dtype) && device.type() != c10::kCPU) {
    witness_raises_too(host, dtype, r);
  }
  judge_memory(r);  // the device's memory figures, whichever way the sides ended
}

}  // namespace mpscheck
