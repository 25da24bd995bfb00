#include "core/host_text.hpp"

#include "util/text.hpp"

#include <fmt/format.h>

namespace mpscheck {

nlohmann::json valid_utf8_json(const nlohmann::json& j) {
  if (j.is_string()) return valid_utf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : j) out.push_back(valid_utf8_json(e));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto it = j.begin(); it != j.end(); ++it) out[valid_utf8(it.key())] = valid_utf8_json(it.value());
    return out;
  }
  return j;
}

std::optional<std::string> not_utf8(const char* option, std::string_view value) {
  std::string shown = valid_utf8(value);
  if (shown == value) return std::nullopt;
  // One line: a newline or another control character in the value is shown as U+FFFD too.
  std::string line;
  for (char c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      line += "\xEF\xBF\xBD";
    else
      line += c;
  }
  shown = std::move(line);
  return fmt::format(
      "{} '{}' is not valid UTF-8 (shown with U+FFFD for the bad bytes); mpscheck hands it to its "
      "workers as JSON text, which must be UTF-8: rename it, or link it from a UTF-8 name",
      option, shown);
}

}  // namespace mpscheck
