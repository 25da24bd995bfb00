#include "checks/result.hpp"
#include "checks/result_json.hpp"

#include "util/text.hpp"
#include "util/untrusted_json.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace mpscheck {

namespace {
// Strings in a result come from plugins and exceptions: made valid UTF-8 here, so that no JSON
// writer (nlohmann's dump() throws on invalid bytes) can fail on them.
std::string text(const std::string& s) { return valid_utf8(s); }
std::vector<std::string> texts(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  out.reserve(v.size());
  for (const auto& s : v) out.push_back(valid_utf8(s));
  return out;
}
}  // namespace

bool is_finding(Status s) { return s != Status::Pass && s != Status::Skip; }

namespace {
// JSON has no infinity or NaN (nlohmann writes null, which reads back as nothing): a non-finite
// figure is written as the string "inf", "-inf" or "nan", and read back from it.
nlohmann::json figure(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}
double figure_from(const nlohmann::json& j) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::infinity();
  }
  // null: a report written before figures were strings, where null stood for a non-finite figure.
  if (j.is_null()) return std::numeric_limits<double>::infinity();
  return j.get<double>();
}
}  // namespace

void to_json(nlohmann::json& j, const OutputReport& o) {
  j = {{"name", text(o.name)},
       {"shape", o.shape},
       {"reference_dtype", o.reference_dtype},
       {"target_dtype", o.target_dtype},
       {"numel", o.numel},
       {"max_abs", figure(o.max_abs)},
       {"max_rel", figure(o.max_rel)},
       {"mismatches", o.mismatches},
       {"first_mismatch", o.first_mismatch},
       {"reference_value", figure(o.reference_value)},
       {"target_value", figure(o.target_value)},
       {"nan_reference", o.nan_reference},
       {"inf_reference", o.inf_reference},
       {"nan_target", o.nan_target},
       {"inf_target", o.inf_target},
       {"ok", o.ok}};
  if (!o.note.empty()) j["note"] = text(o.note);
  if (!o.differs.empty()) j["differs"] = o.differs;
  if (o.nonfinite_mismatches > 0) j["nonfinite_mismatches"] = o.nonfinite_mismatches;
  if (o.rule != Rule::Tolerance) j["rule"] = to_string(o.rule);
  if (o.rmse_reference >= 0) {
    j["rmse_reference_vs_gold"] = figure(o.rmse_reference);
    j["rmse_target_vs_gold"] = figure(o.rmse_target);
  }
}

void from_json(const nlohmann::json& j, OutputReport& o) {
  o.name = j.at("name").get<std::string>();
  o.shape = j.value("shape", std::vector<std::int64_t>{});
  o.reference_dtype = j.value("reference_dtype", "");
  o.target_dtype = j.value("target_dtype", "");
  o.numel = j.value("numel", std::int64_t{0});
  auto num = [&](const char* key) {
    if (!j.contains(key)) return std::numeric_limits<double>::infinity();
    return figure_from(j.at(key));
  };
  o.max_abs = num("max_abs");
  o.max_rel = num("max_rel");
  o.mismatches = j.value("mismatches", std::int64_t{0});
  o.first_mismatch = j.value("first_mismatch", std::int64_t{-1});
  o.reference_value = num("reference_value");
  o.target_value = num("target_value");
  o.nan_reference = j.value("nan_reference", std::int64_t{0});
  o.inf_reference = j.value("inf_reference", std::int64_t{0});
  o.nan_target = j.value("nan_target", std::int64_t{0});
  o.inf_target = j.value("inf_target", std::int64_t{0});
  o.ok = j.value("ok", true);
  o.note = j.value("note", "");
  o.differs = j.value("differs", "");
  o.nonfinite_mismatches = j.value("nonfinite_mismatches", std::int64_t{0});
  o.rule = names::parse<Rule>(names::kRule, j.value("rule", ""), "rule");
  if (j.contains("rmse_reference_vs_gold") && !j.at("rmse_reference_vs_gold").is_null()) {
    o.rmse_reference = figure_from(j.at("rmse_reference_vs_gold"));
    o.rmse_target = num("rmse_target_vs_gold");
  }
}

void to_json(nlohmann::json& j, const TimingStats& t) {
  j = {{"median_s", t.median_s}, {"p25_s", t.p25_s}, {"p75_s", t.p75_s}, {"runs", t.runs}, {"noisy", t.noisy()}};
}

void from_json(const nlohmann::json& j, TimingStats& t) {
  t.median_s = j.at("median_s").get<double>();
  t.p25_s = j.at("p25_s").get<double>();
  t.p75_s = j.at("p75_s").get<double>();
  t.runs = j.at("runs").get<int>();
}

namespace {
// A byte count, or null where the figure does not exist (-1).
nlohmann::json bytes(std::int64_t n) { return n >= 0 ? nlohmann::json(n) : nlohmann::json(); }
std::int64_t bytes_from(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<std::int64_t>() : -1;
}
}  // namespace

void to_json(nlohmann::json& j, const MemoryFigures& m) {
  j = {{"peak_allocated_bytes", bytes(m.peak_allocated)},
       {"peak_source", m.peak_source},
       {"driver_peak_bytes", bytes(m.driver_peak)},
       {"process_peak_bytes", bytes(m.process_peak)},
       {"recommended_max_bytes", bytes(m.recommended_max)}};
  if (m.growth_per_call >= 0) j["growth_per_call_bytes"] = m.growth_per_call;
}

void from_json(const nlohmann::json& j, MemoryFigures& m) {
  m.peak_allocated = bytes_from(j, "peak_allocated_bytes");
  const auto source = j.find("peak_source");
  m.peak_source = source != j.end() && source->is_string() ? source->get<std::string>() : std::string();
  m.driver_peak = bytes_from(j, "driver_peak_bytes");
  m.process_peak = bytes_from(j, "process_peak_bytes");
  m.recommended_max = bytes_from(j, "recommended_max_bytes");
  m.growth_per_call = bytes_from(j, "growth_per_call_bytes");
}

void to_json(nlohmann::json& j, const CaseResult& r) {
  j = {{"id", text(r.id)},
       {"kind", to_string(r.kind)},
       {"tags", texts(r.tags)},
       {"plugin", text(r.plugin)},
       {"status", to_string(r.status)},
       {"message", text(r.message)},
       {"target", text(r.target)},
       {"dtype", r.dtype},
       {"rtol", r.rtol},
       {"atol", r.atol},
       {"outputs", r.outputs},
       {"speedup", r.speedup},
       {"speed_class", to_string(r.speed_class)},
       {"wall_s", r.wall_s},
       {"worker_s", r.worker_s},
       {"compare_s", r.compare_s},
       {"attribution", to_string(r.attribution)},
       {"nondeterministic", r.nondeterministic},
       {"recommendation", to_string(r.recommendation)},
       {"reason", text(r.reason)}};
  j["timed"] = r.timed;
  if (!r.speed_note.empty()) j["speed_note"] = text(r.speed_note);
  if (!r.later_call.empty()) j["later_call"] = text(r.later_call);
  if (r.host_busy) j["host_busy"] = true;
  if (r.run_queue_wait >= 0 || r.reference_thread_share >= 0)
    j["timing_load"] = {{"run_queue_wait", r.run_queue_wait},
                        {"reference_thread_share", r.reference_thread_share},
                        {"crowded_blocks", r.crowded_blocks}};
  if (r.reference_cached) j["reference_cached"] = true;
  if (r.reference_time_reused) j["reference_time_reused"] = true;
  if (!r.warnings.empty()) j["warnings"] = texts(r.warnings);
  j["reference_time"] = r.reference_time ? nlohmann::json(*r.reference_time) : nlohmann::json();
  j["target_time"] = r.target_time ? nlohmann::json(*r.target_time) : nlohmann::json();
  if (!r.signal.empty()) j["signal"] = r.signal;
  if (!r.phase.empty()) j["phase"] = text(r.phase);
  if (r.resumed) j["resumed"] = true;
  // A listed finding past its line's bound is neither expected nor an unexpected pass: the
  // expectation text says which figure went past which bound.
  if (r.expected || r.unexpected_pass || !r.expectation.empty()) {
    j["expected"] = r.expected;
    j["unexpected_pass"] = r.unexpected_pass;
    j["expectation"] = text(r.expectation);
  }
  if (!r.first_diverging_layer.empty()) {
    j["first_diverging_layer"] = text(r.first_diverging_layer);
    j["first_diverging_layer_call"] = r.first_diverging_layer_call;
    if (r.layer) j["layer"] = *r.layer;
  }
  if (r.memory) j["memory"] = *r.memory;
  if (r.op_replay) j["op_replay"] = *r.op_replay;
  if (!r.tier.empty()) j["tier"] = text(r.tier);
  if (!r.device_name.empty()) j["device_name"] = text(r.device_name);
}

void from_json(const nlohmann::json& j, CaseResult& r) {
  r.id = j.at("id").get<std::string>();
  r.kind = case_kind_from_string(j.value("kind", "op"));
  r.tags = j.value("tags", std::vector<std::string>{});
  r.plugin = j.value("plugin", "");
  r.status = status_from_string(j.at("status").get<std::string>());
  r.message = j.value("message", "");
  r.target = j.value("target", "");
  r.dtype = j.value("dtype", "");
  r.rtol = j.value("rtol", 0.0);
  r.atol = j.value("atol", 0.0);
  r.outputs = j.value("outputs", std::vector<OutputReport>{});
  if (j.contains("reference_time") && !j.at("reference_time").is_null())
    r.reference_time = j.at("reference_time").get<TimingStats>();
  if (j.contains("target_time") && !j.at("target_time").is_null())
    r.target_time = j.at("target_time").get<TimingStats>();
  r.speedup = j.contains("speedup") && !j.at("speedup").is_null() ? j.at("speedup").get<double>() : 0.0;
  r.speed_class = speed_class_from_string(j.value("speed_class", ""));
  // Reports written before the plan existed timed every case they have times for.
  r.timed = j.value("timed", r.reference_time.has_value());
  r.speed_note = j.value("speed_note", "");
  r.later_call = j.value("later_call", "");
  // Reports written before the flag said so only in the note.
  r.host_busy = j.value("host_busy", r.speed_note.find("machine was busy") != std::string::npos);
  if (j.contains("timing_load") && j.at("timing_load").is_object()) {
    r.run_queue_wait = j.at("timing_load").value("run_queue_wait", -1.0);
    r.reference_thread_share = j.at("timing_load").value("reference_thread_share", -1.0);
    r.crowded_blocks = j.at("timing_load").value("crowded_blocks", 0);
  }
  r.reference_cached = j.value("reference_cached", false);
  r.reference_time_reused = j.value("reference_time_reused", false);
  r.wall_s = j.value("wall_s", 0.0);
  r.signal = j.value("signal", "");
  r.phase = j.value("phase", "");
  r.worker_s = j.value("worker_s", 0.0);
  r.compare_s = j.value("compare_s", 0.0);
  r.attribution = names::parse<Fragile>(names::kFragile, j.value("attribution", ""), "attribution");
  r.nondeterministic = j.value("nondeterministic", false);
  r.warnings = j.value("warnings", std::vector<std::string>{});
  r.recommendation = recommendation_from_string(j.value("recommendation", ""));
  r.reason = j.value("reason", "");
  r.first_diverging_layer = j.value("first_diverging_layer", "");
  r.first_diverging_layer_call = std::max(1, j.value("first_diverging_layer_call", 1));
  r.expected = j.value("expected", false);
  r.resumed = j.value("resumed", false);
  r.unexpected_pass = j.value("unexpected_pass", false);
  r.expectation = j.value("expectation", "");
  if (j.contains("layer") && !j.at("layer").is_null()) r.layer = j.at("layer").get<OutputReport>();
  if (j.contains("memory") && j.at("memory").is_object()) r.memory = j.at("memory").get<MemoryFigures>();
  if (j.contains("op_replay") && j.at("op_replay").is_object()) r.op_replay = j.at("op_replay").get<OpReplay>();
  r.tier = j.value("tier", "");
  r.device_name = j.value("device_name", "");
}

namespace {
// The fields the result model (and a report's or journal's header) reads as integers, with the
// largest magnitude their type holds.
double integer_limit(const std::string& key) {
  if (key == "runs" || key == "first_diverging_layer_call" || key == "crowded_blocks" || key == "calls" ||
      key == "first_call" || key == "top_level_calls" || key == "replayed" || key == "beyond_bound")
    return static_cast<double>(std::numeric_limits<int>::max());
  for (const char* k :
       {"numel", "mismatches", "first_mismatch", "nan_reference", "inf_reference", "nan_target", "inf_target",
        "nonfinite_mismatches", "shape", "schema_version", "mpscheck_journal", "cases", "seed", "peak_allocated_bytes",
        "driver_peak_bytes", "process_peak_bytes", "recommended_max_bytes"})
    if (key == k) return 9.2e18;  // just under 2^63
  return 0;
}
}  // namespace

std::string bad_result_integer_field(const nlohmann::json& j) { return bad_integer_field(j, integer_limit); }

}  // namespace mpscheck
