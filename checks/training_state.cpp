#include "checks/training_state.hpp"

#include "checks/compare.hpp"
#include "checks/structure.hpp"
#include "checks/verdict.hpp"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>

namespace mpscheck {

std::map<std::string, double> training_floors(const Outputs& reference) {
  std::map<std::string, ScaledSquares> sums;
  std::map<std::string, double> elements;
  for (const auto& o : reference) {
    if (!is_training_state(o.name) || !o.value.defined() || !o.value.is_floating_point() || o.value.numel() == 0)
      continue;
    const double n = static_cast<double>(o.value.numel());
    sums[training_family(o.name)].add(finite_rms(o.value) * std::sqrt(n));
    elements[training_family(o.name)] += n;
  }
  std::map<std::string, double> floors;
  for (const auto& [family, sum] : sums)
    floors[family] = kStructure.family_floor_fraction * sum.root_sum() / std::sqrt(elements[family]);
  return floors;
}

void as_training_state(Tolerance& tol, const std::map<std::string, double>& floors, const std::string& output,
                       c10::ScalarType dtype, double base_atol) {
  const auto floor = floors.find(training_family(output));
  tol.training_state = true;
  tol.unit_floor = floor == floors.end() ? 0.0 : floor->second;
  tol.atol = std::max(base_atol, kScaleRoundingUnits * unit_roundoff(dtype) * tol.unit_floor);
}

at::Tensor excuse_undetermined(const at::Tensor& target, const at::Tensor& honest, const at::Tensor& gold0,
                               const at::Tensor& target0, const std::vector<at::Tensor>& honest0, std::int64_t& count) {
  count = 0;
  auto fits = [&](const at::Tensor& x) { return x.defined() && x.sizes() == target.sizes() && x.is_floating_point(); };
  if (!fits(honest) || !fits(gold0) || !fits(target0)) return target;
  at::NoGradGuard no_grad;
  const at::Tensor g = gold0.detach().to(at::kCPU, at::kDouble);
  at::Tensor error = (target0.detach().to(at::kCPU, at::kDouble) - g).abs().nan_to_num(0, 0, 0);
  for (const at::Tensor& h : honest0)
    if (fits(h)) error = at::maximum(error, (h.detach().to(at::kCPU, at::kDouble) - g).abs().nan_to_num(0, 0, 0));
  const at::Tensor undetermined = g.abs() <= kStructure.undetermined_margin * error;
  count = undetermined.sum().item<std::int64_t>();
  if (count == 0) return target;
  const at::Tensor t = target.detach().to(at::kCPU);
  return at::where(undetermined, honest.detach().to(at::kCPU, t.scalar_type()), t);
}

at::Tensor update_as_judged(const std::string& name, const at::Tensor& target,
                            const std::map<std::string, at::Tensor>& gold,
                            const std::map<std::string, at::Tensor>& target_outputs,
                            const std::vector<const std::map<std::string, at::Tensor>*>& honest, std::int64_t& count) {
  count = 0;
  if (name.rfind("update/", 0) != 0) return target;
  const std::string gradient = "grad0/" + name.substr(7);
  auto find = [](const std::map<std::string, at::Tensor>& m, const std::string& key) {
    const auto it = m.find(key);
    return it == m.end() ? at::Tensor() : it->second;
  };
  at::Tensor honest_update;
  std::vector<at::Tensor> honest_gradients;
  for (const auto* side : honest) {
    if (!honest_update.defined()) honest_update = find(*side, name);
    honest_gradients.push_back(find(*side, gradient));
  }
  return excuse_undetermined(target, honest_update, find(gold, gradient), find(target_outputs, gradient),
                             honest_gradients, count);
}

void systematic_unless_nudged_too(std::vector<OutputAttribution>& failing,
                                  const std::map<std::string, at::Tensor>& gold,
                                  const std::map<std::string, at::Tensor>& reference,
                                  const std::map<std::string, at::Tensor>& rounded,
                                  const std::map<std::string, at::Tensor>& witness,
                                  const std::map<std::string, at::Tensor>& nudged,
                                  const std::map<std::string, Tolerance>& tols, c10::ScalarType dtype) {
  auto find = [](const std::map<std::string, at::Tensor>& m, const std::string& key) {
    const auto it = m.find(key);
    return it == m.end() ? at::Tensor() : it->second;
  };
  for (auto& f : failing) {
    Attribution& a = f.attribution;
    const std::string& name = f.output->name;
    if (!a.training_state || a.target_ok || a.systematic || !a.structure.measured) continue;
    const at::Tensor n = find(nudged, name), w = find(witness, name), g = find(gold, name);
    if (!n.defined() || !w.defined() || !g.defined()) continue;
    const auto tol = tols.find(name);
    StructureOptions options;
    options.training_state = true;
    options.floor = tol == tols.end() ? 0.0 : tol->second.unit_floor;
    if (is_update(name)) options.magnitude = find(reference, param_of_update(name));
    const StructureTest chaos = test_structure(g, n, find(rounded, name), w, dtype, options);
    const bool shape = !a.structure.ok && chaos.ok;
    const bool size = !a.structure.scatter_ok && chaos.scatter_ok;
    if (shape || size) a.systematic = true;
  }
}

}  // namespace mpscheck
