// The result model every report is written from. Plain data: no LibTorch in here, so report
// writers and `compare`/`merge` work on JSON files alone.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mpscheck {

enum class Status { Pass, Mismatch, Nan, Unsupported, Error, Crash, Timeout, Skip };

const char* to_string(Status s);
Status status_from_string(const std::string& s);  // throws std::invalid_argument
// A finding is anything a user must look at: every status except pass and skip.
bool is_finding(Status s);

// Comparison figures for one named output.
struct OutputReport {
  std::string name;
  std::vector<std::int64_t> shape;
  std::string reference_dtype, target_dtype;
  std::int64_t numel = 0;
  double max_abs = 0, max_rel = 0;
  std::int64_t mismatches = 0;
  std::int64_t first_mismatch = -1;  // flat index into the output
  double reference_value = 0, target_value = 0;  // at the largest error
  std::int64_t nan_reference = 0, inf_reference = 0, nan_target = 0, inf_target = 0;
  bool ok = true;
  std::string note;  // shape/dtype disagreements, statistics used, ...
};

struct TimingStats {
  double median_s = 0, p25_s = 0, p75_s = 0;
  int runs = 0;
  bool noisy() const { return median_s > 0 && (p75_s - p25_s) / median_s >= 0.1; }
};

struct CaseResult {
  std::string id;
  std::string kind;  // "op" | "model"
  std::vector<std::string> tags;
  std::string plugin;
  Status status = Status::Skip;
  std::string message;
  std::string target;  // "cpu:bfloat16"
  std::string dtype;   // dtype the target computed in
  double rtol = 0, atol = 0;
  std::vector<OutputReport> outputs;
  std::optional<TimingStats> reference_time, target_time;
  double speedup = 0;          // reference median / target median; 0 when not timed
  std::string speed_class;     // "faster" | "similar" | "slower" | "" (not timed)
  double wall_s = 0;           // whole case as the host saw it, overhead included
  std::string signal;          // crash: the signal's name
};

void to_json(nlohmann::json& j, const OutputReport& o);
void from_json(const nlohmann::json& j, OutputReport& o);
void to_json(nlohmann::json& j, const TimingStats& t);
void from_json(const nlohmann::json& j, TimingStats& t);
void to_json(nlohmann::json& j, const CaseResult& r);
void from_json(const nlohmann::json& j, CaseResult& r);

}  // namespace mpscheck
