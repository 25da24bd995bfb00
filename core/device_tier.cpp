#include "core/device_tier.hpp"

#include "checks/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace mpscheck {

namespace {
bool contains_lower(std::string text, const std::string& part) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text.find(part) != std::string::npos;
}
}  // namespace

Tier tier_from_facts(const DeviceFacts& facts) {
  Tier t;
  // Apple's Virtualization framework names the guest's GPU "Apple Paravirtual device".
  if (contains_lower(facts.name, "paravirtual")) {
    t.name = "paravirtual";
    t.why = fmt::format(
        "the device is '{}', a virtual machine's GPU (a GitHub-hosted macOS runner's), not Apple "
        "Silicon's own",
        facts.name);
  }
  return t;
}

Tier tier_after_run(const Tier& before, const std::vector<CaseResult>& cases) {
  if (before.name != "native") return before;
  const CaseResult* largest = nullptr;
  std::int64_t max = -1;
  for (const auto& c : cases) {
    if (c.status != Status::Memory || !c.memory) continue;
    max = std::max(max, c.memory->recommended_max);
    if (!largest || c.memory->peak_allocated > largest->memory->peak_allocated) largest = &c;
  }
  if (!largest) return before;
  Tier t;
  t.name = "constrained";
  t.why = fmt::format("the device's memory is below what the selected cases need: {} needs {}{}", largest->id,
                      bytes_text(largest->memory->peak_allocated) +
                          (largest->message.find("out of memory") != std::string::npos ? " or more (it ran out)" : ""),
                      max > 0 ? ", the device recommends at most " + bytes_text(max) : std::string());
  return t;
}

std::string tier_line(const std::string& device, const DeviceFacts& facts, const Tier& tier) {
  std::string about;
  if (!facts.name.empty()) about = "'" + facts.name + "'";
  if (facts.recommended_max > 0)
    about += (about.empty() ? "" : "; ") + std::string("recommends at most ") + bytes_text(facts.recommended_max);
  return fmt::format("device {}{}: tier {}{}", device, about.empty() ? "" : " (" + about + ")", tier.name,
                     tier.why.empty() ? "" : ": " + tier.why + "; its findings are marked with the tier");
}

void apply_tier(const Tier& tier, nlohmann::json& environment, std::vector<CaseResult>& cases) {
  environment["tier"] = tier.name;
  if (!tier.why.empty()) environment["tier_reason"] = tier.why;
  if (tier.name == "native") return;
  for (auto& c : cases)
    if (is_finding(c.status)) c.tier = tier.name;
}

}  // namespace mpscheck
