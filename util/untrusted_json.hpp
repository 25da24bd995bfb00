// Checks on JSON that came from outside (reports, journals, a worker's lines) before it is turned
// into values: nlohmann converts a float to an integer field with a plain cast, which is undefined
// behaviour when the value does not fit (UBSan in tests/fuzz/fuzz_report_json on "runs": 1e300).
// Which fields are integers is the format's knowledge, not util's: the caller passes it
// (checks/result_json.hpp has mpscheck's).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace mpscheck {

// The largest magnitude the integer field named `key` may hold, or 0 when `key` is no integer field.
using IntegerFieldLimit = double (*)(const std::string& key);

// Empty when every integer field of `j`, at any depth (and each number of an array such a field
// holds), is a value below its limit; otherwise the key of the first that is not. A float that is
// not finite never fits; an integer always does (nlohmann has read it into an integer type).
std::string bad_integer_field(const nlohmann::json& j, IntegerFieldLimit limit_of);

}  // namespace mpscheck
