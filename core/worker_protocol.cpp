#include "core/worker_protocol.hpp"

#include "core/untrusted_json.hpp"

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

CaseResult parse_result_message(const std::string& line, const std::string& expected_id) {
  const nlohmann::json j = parse_object(line);
  if (const std::string bad = bad_integer_field(j); !bad.empty())
    throw ProtocolError(fmt::format("the worker sent an unreadable result ('{}' is not an integer in range)", bad));
  CaseResult r;
  try {
    r = j.get<CaseResult>();
  } catch (const std::exception& e) {
    throw ProtocolError(fmt::format("the worker sent an unreadable result ({})", e.what()));
  }
  if (r.id != expected_id)
    throw ProtocolError(fmt::format("the worker answered for case '{}' while running '{}'", excerpt(r.id), expected_id));
  return r;
}

}  // namespace mpscheck
