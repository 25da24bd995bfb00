// Checks on JSON that came from outside (reports, journals, a worker's lines) before it is turned
// into results: nlohmann converts a float to an integer field with a plain cast, which is undefined
// behaviour when the value does not fit (UBSan in tests/fuzz/fuzz_report_json on "runs": 1e300).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace mpscheck {

// Empty when every integer field of the results in `j` (runs, numel, shape, mismatch counts, ...)
// holds a value its C++ type can take; otherwise names the first field that does not.
std::string bad_integer_field(const nlohmann::json& j);

}  // namespace mpscheck
