// Text that comes from the host (argv, paths, environment values) on its way into JSON: Linux
// paths and variables are bytes, and a Latin-1 name is ordinary, while nlohmann's writer throws
// on invalid UTF-8 (which aborted the host after every case had run, issue 23 item 6).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace mpscheck {

// Every string and object key of `j` as well-formed UTF-8 (invalid sequences become U+FFFD).
nlohmann::json valid_utf8_json(const nlohmann::json& j);

// For a value the host must hand to its workers byte for byte (they get it as JSON text): the
// one-line refusal when it is not valid UTF-8, naming the option and the value as it can be shown.
std::optional<std::string> not_utf8(const char* option, std::string_view value);

}  // namespace mpscheck
