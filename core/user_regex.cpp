#include "core/user_regex.hpp"

#include <cctype>

namespace mpscheck {

std::regex user_regex(const std::string& pattern) {
  if (pattern.size() > kMaxPatternLength) throw std::regex_error(std::regex_constants::error_complexity);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\') {
      // An escaped character is literal, except a back-reference \N: its number overflows the same way.
      size_t digits = 0;
      while (i + 1 < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[i + 1]))) ++i, ++digits;
      if (digits > 3) throw std::regex_error(std::regex_constants::error_backref);
      if (digits == 0) ++i;
      continue;
    }
    // A quantifier on a quantifier (".**", "a+*"): not ECMAScript, and libstdc++ backtracks on it
    // exponentially (a fuzz input hung for over 10 s on a 40-character id). "*?" stays: it is lazy.
    if ((pattern[i] == '*' || pattern[i] == '+' || pattern[i] == '?' || pattern[i] == '}') && i + 1 < pattern.size() &&
        (pattern[i + 1] == '*' || pattern[i + 1] == '+' || pattern[i + 1] == '{'))
      throw std::regex_error(std::regex_constants::error_badrepeat);
    if (pattern[i] != '{') continue;
    // {n}, {n,} and {n,m}: every count must be small.
    for (size_t j = i + 1; j < pattern.size() && pattern[j] != '}'; ++j) {
      if (!std::isdigit(static_cast<unsigned char>(pattern[j]))) continue;
      long value = 0;
      size_t k = j;
      while (k < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[k])) && value <= kMaxRepeatCount)
        value = value * 10 + (pattern[k++] - '0');
      if (value > kMaxRepeatCount) throw std::regex_error(std::regex_constants::error_badbrace);
      j = k - 1;
    }
  }
  return std::regex(pattern, std::regex::ECMAScript);
}

}  // namespace mpscheck
