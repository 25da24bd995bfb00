#include "core/input_spec.hpp"

#include <mpscheck/dtype_names.hpp>

#include <fmt/format.h>

#include <cctype>
#include <utility>

namespace mpscheck {

namespace {

// Any spelling of a dtype in include/mpscheck/dtype_names.hpp; the error lists the names.
c10::ScalarType dtype_named(const std::string& name, const std::string& spec) {
  if (const std::optional<c10::ScalarType> t = dtype_from_word(name)) return *t;
  std::string names;
  for (const DtypeSpelling& d : kDtypeSpellings) names += (names.empty() ? "" : ", ") + std::string(d.name);
  throw BadModelInput(fmt::format("--input {}: unknown dtype '{}'; use one of {}", spec, name.substr(0, 40), names));
}

// A hand-written scanner rather than std::regex: libstdc++'s regex recurses per character, so a
// long enough spec overflows the stack (GCC bug 86164).
struct Scanner {
  const std::string& s;
  size_t i = 0;
  void skip_space() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool eat(char c) {
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  // An optionally negative decimal integer of at most 18 digits (so it fits in int64 with room).
  bool integer(int64_t* out, bool allow_negative) {
    const bool negative = allow_negative && eat('-');
    const size_t start = i;
    int64_t v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (i - start >= 18) return false;
      v = v * 10 + (s[i] - '0');
      ++i;
    }
    if (i == start) return false;
    *out = negative ? -v : v;
    return true;
  }
};

}  // namespace

InputSpec parse_input_spec(const std::string& text) {
  const auto bad_form = [&] {
    return BadModelInput(
        fmt::format("--input '{}' is not DTYPE[d0,d1,...] with an optional :LO..HI, e.g. "
                    "float32[1,3,224,224] or int64[1,128]:0..30522",
                    text.size() > 80 ? text.substr(0, 80) + "..." : text));
  };
  Scanner sc{text};
  sc.skip_space();
  const size_t name_start = sc.i;
  while (sc.i < text.size() && std::isalnum(static_cast<unsigned char>(text[sc.i]))) ++sc.i;
  if (sc.i == name_start || !sc.eat('[')) throw bad_form();
  InputSpec s;
  s.text = text;
  const std::string name = text.substr(name_start, sc.i - 1 - name_start);
  int64_t numel = 1;
  sc.skip_space();
  if (!sc.eat(']')) {
    for (;;) {
      sc.skip_space();
      int64_t d = 0;
      if (sc.i < text.size() && (text[sc.i] == ',' || text[sc.i] == ']'))
        throw BadModelInput(fmt::format("--input '{}': empty dimension", text));
      if (!sc.integer(&d, false)) throw bad_form();
      s.shape.push_back(d);
      numel = d == 0 ? 0 : numel;
      if (numel != 0 && d > kMaxInputElements / numel)
        throw BadModelInput(
            fmt::format("--input '{}': more than {} elements; use a smaller shape", text, kMaxInputElements));
      numel *= d;
      sc.skip_space();
      if (sc.eat(']')) break;
      if (!sc.eat(',')) throw bad_form();
    }
  }
  bool range = false;
  if (sc.eat(':')) {
    if (!sc.integer(&s.lo, true) || !sc.eat('.') || !sc.eat('.') || !sc.integer(&s.hi, true)) throw bad_form();
    range = true;
  }
  sc.skip_space();
  if (sc.i != text.size()) throw bad_form();
  s.dtype = dtype_named(name, text);
  if (range) {
    if (c10::isFloatingType(s.dtype) || s.dtype == c10::kBool)
      throw BadModelInput(fmt::format("--input '{}': a :LO..HI range is for integer inputs", text));
    if (s.hi <= s.lo) throw BadModelInput(fmt::format("--input '{}': the range must have LO < HI (HI excluded)", text));
  }
  return s;
}

}  // namespace mpscheck
