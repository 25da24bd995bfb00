#include "util/text.hpp"

#include <cstdint>
#include <span>

namespace mpscheck {

namespace {

constexpr char32_t kReplacement = 0xFFFD;

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Calls f(code point) for each code point; a bad sequence yields one U+FFFD for its longest
// valid-looking prefix (the WHATWG decoder's rule), so no byte of the input is lost silently.
template <class F>
void for_each_code_point(std::string_view s, F&& f) {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(s[i]); };
  std::size_t i = 0;
  while (i < s.size()) {
    const std::uint8_t b = byte(i);
    if (b < 0x80) {
      f(static_cast<char32_t>(b));
      ++i;
      continue;
    }
    int need = 0;
    char32_t cp = 0;
    std::uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the first continuation byte
    if (b >= 0xC2 && b <= 0xDF) {
      need = 1, cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need = 2, cp = b & 0x0F;
      if (b == 0xE0) lo = 0xA0;  // overlong
      if (b == 0xED) hi = 0x9F;  // surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      need = 3, cp = b & 0x07;
      if (b == 0xF0) lo = 0x90;  // overlong
      if (b == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      f(kReplacement);
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    bool ok = true;
    for (int k = 0; k < need; ++k, ++j) {
      if (j >= s.size()) {
        ok = false;
        break;
      }
      const std::uint8_t c = byte(j);
      const std::uint8_t min = k == 0 ? lo : 0x80, max = k == 0 ? hi : 0xBF;
      if (c < min || c > max) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (c & 0x3F);
    }
    f(ok ? cp : kReplacement);
    i = j;
  }
}

bool is_control(char32_t cp) { return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F); }

// What one code point becomes in a format.
struct Substitution {
  char32_t code_point;
  const char* text;
};

// The one escaping loop behind the three formats: invalid UTF-8 is repaired, then each code
// point with an entry in `table` becomes its text; any other control character is dropped, and
// the rest is copied.
std::string escape_code_points(std::string_view text, std::span<const Substitution> table) {
  std::string out;
  out.reserve(text.size() + 16);
  for_each_code_point(text, [&](char32_t cp) {
    for (const Substitution& s : table)
      if (s.code_point == cp) {
        out += s.text;
        return;
      }
    if (!is_control(cp)) append_utf8(out, cp);
  });
  return out;
}

constexpr const char* kReplacementUtf8 = "\xEF\xBF\xBD";  // U+FFFD
// Tab, newline and carriage return as references survive attribute-value normalisation; `>` as
// an entity keeps `]]>` out of the document; U+FFFE and U+FFFF are no XML characters.
constexpr Substitution kXml[] = {{'<', "&lt;"},
                                 {'>', "&gt;"},
                                 {'&', "&amp;"},
                                 {'"', "&quot;"},
                                 {'\'', "&apos;"},
                                 {'\t', "&#9;"},
                                 {'\n', "&#10;"},
                                 {'\r', "&#13;"},
                                 {0xFFFE, kReplacementUtf8},
                                 {0xFFFF, kReplacementUtf8}};
constexpr Substitution kHtml[] = {{'<', "&lt;"},   {'>', "&gt;"}, {'&', "&amp;"}, {'"', "&quot;"},
                                  {'\'', "&#39;"}, {'\t', "\t"},  {'\n', "\n"}};
// One table cell or line of prose: no line breaks, and Markdown's own characters taken literally.
constexpr Substitution kMarkdown[] = {{'\n', " "},    {'\t', " "},  {'<', "&lt;"}, {'>', "&gt;"}, {'&', "&amp;"},
                                      {'\\', "\\\\"}, {'|', "\\|"}, {'`', "\\`"},  {'*', "\\*"},  {'_', "\\_"},
                                      {'[', "\\["},   {']', "\\]"}, {'~', "\\~"}};

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_code_point(text, [&](char32_t cp) { append_utf8(out, cp); });
  return out;
}

std::string xml_escape(std::string_view text) { return escape_code_points(text, kXml); }
std::string html_escape(std::string_view text) { return escape_code_points(text, kHtml); }
std::string markdown_escape(std::string_view text) { return escape_code_points(text, kMarkdown); }

std::string shorten(std::string_view text, std::size_t max_code_points) {
  std::string out;
  std::size_t n = 0;
  bool cut = false;
  for_each_code_point(text, [&](char32_t cp) {
    if (cut) return;
    if (n + 1 > max_code_points) {
      cut = true;
      return;
    }
    append_utf8(out, cp);
    ++n;
  });
  if (cut && max_code_points > 0) {
    // Make room for the ellipsis: drop the last code point written.
    while (!out.empty() && (static_cast<std::uint8_t>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty()) out.pop_back();
    out += "\xE2\x80\xA6";
  }
  return out;
}

}  // namespace mpscheck
