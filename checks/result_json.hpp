// The result model's JSON as read from outside (a report, a journal, a worker's line): which of its
// fields are integers, and how large each may be, checked before nlohmann converts them
// (util/untrusted_json.hpp does the walking). The results' own fields and those of the documents
// that carry them (a report's header, a journal's) are listed here, beside the JSON they describe
// (checks/result_json.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace mpscheck {

// Empty when every integer field of the results in `j` (runs, numel, shape, mismatch counts, ...)
// and of a report's or journal's header (schema_version, mpscheck_journal, seed, ...) holds a value
// its C++ type can take; otherwise names the first field that does not.
std::string bad_result_integer_field(const nlohmann::json& j);

}  // namespace mpscheck
