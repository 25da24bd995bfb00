// Regular expressions typed by users (--filter, expectations files), compiled with limits that
// keep libstdc++'s std::regex safe: it overflows a signed integer on a huge {n} count or \N
// back-reference (both found by tests/fuzz/fuzz_expectations), builds an automaton as large as
// any count it is given, and recurses deeply on long patterns.
#pragma once

#include <regex>
#include <string>

namespace mpscheck {

constexpr size_t kMaxPatternLength = 1000;
constexpr long kMaxRepeatCount = 1000;

// Throws std::regex_error for an invalid pattern, or one past the limits above.
std::regex user_regex(const std::string& pattern);

}  // namespace mpscheck
