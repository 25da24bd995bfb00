// Text safety for the report writers: every string from a case (ids, messages, environment
// values) may hold anything a plugin or an exception produced, so it passes through here.
#pragma once

#include <cstddef>
#include <string>
#include <vector>
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

// A figure for a table: 3 significant digits, "inf"/"-inf"/"nan" spelled out.
std::string format_figure(double value);
// A speedup for people: two decimals from 0.1x up ("1.03"), two significant digits below, so a
// 370x slowdown reads "0.0027" and not "0.00".
std::string format_speedup(double speedup);

// The parts of a case id between its slashes ("op/binary/mul/f32/contiguous/forward": six parts).
std::vector<std::string> id_parts(const std::string& id);

}  // namespace mpscheck
