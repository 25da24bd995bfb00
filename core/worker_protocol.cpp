#include "core/worker_protocol.hpp"

#include <mpscheck/dtype_names.hpp>

#include "checks/result_json.hpp"

#include <fmt/format.h>

namespace mpscheck {

namespace {
// Quoted in messages: enough to recognise, never a whole megabyte of garbage.
std::string excerpt(const std::string& line) {
  std::string s = line.substr(0, 80);
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return line.size() > 80 ? s + "..." : s;
}

nlohmann::json parse_object(const std::string& line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw ProtocolError(fmt::format("the worker sent a line that is not a JSON object: '{}'", excerpt(line)));
  return j;
}
}  // namespace

namespace {
// The target as the worker needs it: a device name and a dtype from the one dtype table, never
// "auto" (the host resolves it) and never a text to parse again.
void target_to_json(nlohmann::json& j, const TargetSpec& t) {
  j = {{"device", t.device}, {"dtype", dtype_name(t.float_dtype())}};
}
TargetSpec target_from_json(const nlohmann::json& j) {
  TargetSpec t;
  t.device = j.at("device").get<std::string>();
  if (t.device.empty() || t.device == "auto")
    throw ProtocolError(fmt::format("the host sent an unresolved target device '{}'", excerpt(t.device)));
  const std::string word = j.at("dtype").get<std::string>();
  const std::optional<c10::ScalarType> dtype = dtype_from_word(word);
  if (!dtype || (*dtype != c10::kFloat && *dtype != c10::kHalf && *dtype != c10::kBFloat16))
    throw ProtocolError(
        fmt::format("the host sent a target dtype '{}' that is not float32, float16 or bfloat16", excerpt(word)));
  if (*dtype != c10::kFloat) t.dtype = *dtype;
  return t;
}
}  // namespace

void to_json(nlohmann::json& j, const WorkerConfig& c) {
  nlohmann::json target;
  target_to_json(target, c.target);
  j = {{"target", target},
       {"seed", c.seed},
       {"quick", c.quick},
       {"min_time", c.min_time},
       {"threads", c.threads},
       {"verdict_threads", c.verdict_threads},
       {"default_plugins", c.default_plugins},
       {"plugin_dirs", c.plugin_dirs},
       {"model", c.model},
       {"inputs", c.inputs},
       {"model_for", c.model_for},
       {"eager", c.eager},
       {"train", c.train},
       {"reference_cache", c.reference_cache},
       {"reuse_reference_times", c.reuse_reference_times},
       {"op_replay", c.op_replay}};
}

void from_json(const nlohmann::json& j, WorkerConfig& c) {
  c.target = target_from_json(j.at("target"));
  c.seed = j.at("seed").get<std::uint64_t>();
  c.quick = j.at("quick").get<bool>();
  c.min_time = j.at("min_time").get<double>();
  c.threads = j.value("threads", 0);
  c.verdict_threads = j.value("verdict_threads", 0);
  c.default_plugins = j.value("default_plugins", true);
  c.plugin_dirs = j.value("plugin_dirs", std::vector<std::string>{});
  c.model = j.value("model", "");
  c.inputs = j.value("inputs", std::vector<std::string>{});
  c.model_for = j.value("model_for", std::vector<std::string>{});
  c.eager = j.value("eager", "");
  c.train = j.value("train", false);
  c.reference_cache = j.value("reference_cache", "");
  c.reuse_reference_times = j.value("reuse_reference_times", false);
  c.op_replay = j.value("op_replay", true);
}

void to_json(nlohmann::json& j, const CaseRequest& r) { j = {{"id", r.id}, {"time", r.time}}; }

void from_json(const nlohmann::json& j, CaseRequest& r) {
  r.id = j.at("id").get<std::string>();
  r.time = j.value("time", true);
}

WorkerReady parse_ready_message(const std::string& line) {
  const nlohmann::json j = parse_object(line);
  const auto ready = j.find("ready");
  if (ready == j.end() || !ready->is_boolean())
    throw ProtocolError(fmt::format("the worker's first line is not a ready message: '{}'", excerpt(line)));
  WorkerReady r;
  r.ok = ready->get<bool>();
  if (const auto n = j.find("cases"); n != j.end() && n->is_number_unsigned()) r.cases = n->get<std::size_t>();
  if (const auto e = j.find("error"); e != j.end() && e->is_string()) r.error = e->get<std::string>();
  if (!r.ok && r.error.empty()) r.error = "the worker gave no reason";
  return r;
}

std::string phase_message(const std::string& phase) { return nlohmann::json{{"phase", phase}}.dump(); }

std::string parse_phase_message(const std::string& line) {
  // Cheap test first: result lines are large and never start like this.
  if (line.rfind("{\"phase\":", 0) != 0) return {};
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.size() != 1) return {};
  const auto p = j.find("phase");
  if (p == j.end() || !p->is_string()) return {};
  std::string phase = p->get<std::string>();
  static const char* const kPhases[] = {"reference", "target", "comparison", "float64", "localisation", "timing"};
  for (const char* known : kPhases)
    if (phase == known) return phase;
  throw ProtocolError(fmt::format("the worker reported an unknown phase '{}'", excerpt(phase)));
}

bool phase_is_target(const std::string& phase) { return phase.empty() || phase == "target"; }

CaseResult parse_result_message(const std::string& line, const std::string& expected_id) {
  const nlohmann::json j = parse_object(line);
  if (const std::string bad = bad_result_integer_field(j); !bad.empty())
    throw ProtocolError(fmt::format("the worker sent an unreadable result ('{}' is not an integer in range)", bad));
  CaseResult r;
  try {
    r = j.get<CaseResult>();
  } catch (const std::exception& e) {
    throw ProtocolError(fmt::format("the worker sent an unreadable result ({})", e.what()));
  }
  if (r.id != expected_id)
    throw ProtocolError(
        fmt::format("the worker answered for case '{}' while running '{}'", excerpt(r.id), expected_id));
  return r;
}

}  // namespace mpscheck
