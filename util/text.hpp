// Text safety: UTF-8 repair and escaping for XML, HTML and Markdown. Every string from a case
// (ids, messages, environment values) may hold anything a plugin or an exception produced, so
// the report writers, the host's own text and the comparisons' messages pass it through here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mpscheck {

// Well-formed UTF-8: every invalid or truncated sequence, overlong form or surrogate becomes U+FFFD.
std::string valid_utf8(std::string_view text);

// XML 1.0 text and attribute values: `< > & " '` as entities, control characters dropped
// (tab, newline and carriage return kept as character references), invalid UTF-8 replaced.
// The result never contains a raw `]]>`.
std::string xml_escape(std::string_view text);

// HTML text and attribute values (quoted): the same five characters as entities, control
// characters other than tab and newline dropped, invalid UTF-8 replaced.
std::string html_escape(std::string_view text);

// One Markdown table cell or one line of prose: newlines and tabs become spaces, control
// characters are dropped, `\ | ` * _ [ ] ~` are backslash-escaped, `< > &` become entities.
std::string markdown_escape(std::string_view text);

// At most `max_code_points` code points (after UTF-8 repair), ending in "…" when cut.
std::string shorten(std::string_view text, std::size_t max_code_points);

}  // namespace mpscheck
