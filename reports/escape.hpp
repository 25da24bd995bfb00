// Report text: figures, speedups and case-id parts as the reports print them. The escaping
// itself (UTF-8 repair, XML, HTML, Markdown) is generic and lives in util/text.hpp, included
// here because every report writer needs both.
#pragma once

#include "util/text.hpp"

#include <string>
#include <vector>

namespace mpscheck {

// A figure for a table: 3 significant digits, "inf"/"-inf"/"nan" spelled out.
std::string format_figure(double value);
// A speedup for people: two decimals from 0.1x up ("1.03"), two significant digits below, so a
// 370x slowdown reads "0.0027" and not "0.00".
std::string format_speedup(double speedup);

// The parts of a case id between its slashes ("op/binary/mul/f32/contiguous/forward": six parts).
std::vector<std::string> id_parts(const std::string& id);

}  // namespace mpscheck
