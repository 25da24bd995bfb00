// The words a result is made of, each with its one name table: what a case is, how it ended, how
// its speed compares and what to do about it. Plain enums with no dependencies, below every layer:
// the SDK's workloads, the checks and the reports all use these, and only these, names.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace mpscheck {

// What a workload is. (A result's kind adds the host's device probe: CaseKind, checks/result.hpp.)
enum class Kind { Op, Model };
// New statuses go last so the numbering of the older ones stays as it was. Memory: the case needs
// more memory than the device recommends (or the device ran out of it).
enum class Status { Pass, Mismatch, Nan, Unsupported, Error, Crash, Timeout, Skip, Fallback, Memory };
// None: the case was not timed (or not a pass: the speed of a wrong answer means nothing).
enum class SpeedClass { None, Faster, Similar, Slower };
// None: not decided yet (recommend() fills it once the status and speed are known).
// ReduceMemory: the case does not fit the device's recommended memory; smaller batches or a larger device.
enum class Recommendation { None, Accelerate, KeepOnCpu, Blocked, ReduceMemory };

namespace names {
// The names as they appear in reports, JSON and the console; index = enum value.
inline constexpr const char* kKind[] = {"op", "model"};
inline constexpr const char* kStatus[] = {"pass",  "mismatch", "nan",  "unsupported", "error",
                                          "crash", "timeout",  "skip", "fallback",    "memory"};
inline constexpr const char* kSpeedClass[] = {"", "faster", "similar", "slower"};
inline constexpr const char* kRecommendation[] = {"", "accelerate", "keep on CPU", "blocked", "reduce memory"};

template <typename E, std::size_t N>
E parse(const char* const (&table)[N], const std::string& s, const char* what) {
  for (std::size_t i = 0; i < N; ++i)
    if (s == table[i]) return static_cast<E>(i);
  throw std::invalid_argument(std::string("unknown ") + what + " '" + s + "'");
}
}  // namespace names

inline const char* to_string(Kind k) { return names::kKind[static_cast<int>(k)]; }
inline const char* to_string(Status s) { return names::kStatus[static_cast<int>(s)]; }
inline const char* to_string(SpeedClass c) { return names::kSpeedClass[static_cast<int>(c)]; }
inline const char* to_string(Recommendation r) { return names::kRecommendation[static_cast<int>(r)]; }

// Each throws std::invalid_argument naming the unknown word.
inline Kind kind_from_string(const std::string& s) { return names::parse<Kind>(names::kKind, s, "kind"); }
inline Status status_from_string(const std::string& s) { return names::parse<Status>(names::kStatus, s, "status"); }
inline SpeedClass speed_class_from_string(const std::string& s) {
  return names::parse<SpeedClass>(names::kSpeedClass, s, "speed class");
}
inline Recommendation recommendation_from_string(const std::string& s) {
  return names::parse<Recommendation>(names::kRecommendation, s, "recommendation");
}

}  // namespace mpscheck
