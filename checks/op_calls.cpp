#include "checks/op_calls.hpp"

#include "checks/result.hpp"

#include <algorithm>

namespace mpscheck {

int OpReplay::findings() const {
  return static_cast<int>(
      std::count_if(calls.begin(), calls.end(), [](const OpCallReport& c) { return is_finding(c.status); }));
}

namespace {
// Text from a kernel may hold any bytes: the dump replaces invalid UTF-8 (as the rest of a result).
nlohmann::json text(const std::string& s) { return s; }
}  // namespace

void to_json(nlohmann::json& j, const OpCallReport& c) {
  j = {{"op", text(c.op)},
       {"overload", text(c.overload)},
       {"arguments", text(c.arguments)},
       {"module", text(c.module)},
       {"calls", c.calls},
       {"first_call", c.first_call},
       {"backward", c.backward},
       {"status", to_string(c.status)},
       {"message", text(c.message)}};
  if (!c.later_call.empty()) j["later_call"] = text(c.later_call);
  if (!c.fingerprint.empty()) j["fingerprint"] = text(c.fingerprint);
  if (!c.reproducer.empty()) j["reproducer"] = text(c.reproducer);
}

void from_json(const nlohmann::json& j, OpCallReport& c) {
  c.op = j.at("op").get<std::string>();
  c.overload = j.value("overload", "");
  c.arguments = j.value("arguments", "");
  c.module = j.value("module", "");
  c.calls = j.value("calls", 0);
  c.first_call = j.value("first_call", 0);
  c.backward = j.value("backward", false);
  c.status = status_from_string(j.at("status").get<std::string>());
  c.message = j.value("message", "");
  c.later_call = j.value("later_call", "");
  c.fingerprint = j.value("fingerprint", "");
  c.reproducer = j.value("reproducer", "");
}

void to_json(nlohmann::json& j, const OpReplay& r) {
  j = {{"top_level_calls", r.top_level_calls},
       {"replayed", r.replayed},
       {"beyond_bound", r.beyond_bound},
       {"not_replayed", text(r.not_replayed)},
       {"ops", r.calls}};
  if (!r.note.empty()) j["note"] = text(r.note);
}

void from_json(const nlohmann::json& j, OpReplay& r) {
  r.top_level_calls = j.value("top_level_calls", 0);
  r.replayed = j.value("replayed", 0);
  r.beyond_bound = j.value("beyond_bound", 0);
  r.not_replayed = j.value("not_replayed", "");
  r.note = j.value("note", "");
  r.calls = j.value("ops", std::vector<OpCallReport>{});
}

}  // namespace mpscheck
