// The device's tier: what kind of device a run's findings were measured on. A paravirtual GPU
// (GitHub's hosted macOS runners show Metal an "Apple Paravirtual device") or a device with less
// memory than the run's cases need is a tier of its own, not a verdict: its findings say more about
// that device than about the hardware users run. Plain data, no LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checks/result.hpp"

namespace mpscheck {

// What the worker learns about the target device before the first case (core/probe.cpp).
struct DeviceFacts {
  std::string name;                   // Metal's device name on MPS, a plugin device's own; empty where unknown
  std::int64_t recommended_max = -1;  // bytes; -1 where unknown
};

struct Tier {
  std::string name = "native";  // "native", "paravirtual" or "constrained"
  std::string why;              // one clause; empty for native
};

// The tier from what the device says of itself: paravirtual when its name says so.
Tier tier_from_facts(const DeviceFacts& facts);

// The tier once the run's cases are in: a native device on which a case needed more memory than
// the device recommends (a `memory` finding) is constrained, with the largest need and the maximum.
Tier tier_after_run(const Tier& before, const std::vector<CaseResult>& cases);

// The run header's line about the device: "device sim ('Apple Paravirtual device'; recommends at
// most 1.00 GiB): tier paravirtual: ...".
std::string tier_line(const std::string& device, const DeviceFacts& facts, const Tier& tier);

// Marks every finding of `cases` with `tier` (nothing for native) and sets the environment block's
// "tier" and "tier_reason", which --expect lines keyed tier= read.
void apply_tier(const Tier& tier, nlohmann::json& environment, std::vector<CaseResult>& cases);

}  // namespace mpscheck
