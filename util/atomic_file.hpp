// The one atomic file writer, for every report and the reference cache's entries, and the error
// it throws. Generic: a path and bytes in, no knowledge of what the file holds.
#pragma once

#include <stdexcept>
#include <string>

namespace mpscheck {

// A report (or another file mpscheck writes or reads) that cannot be written or read: the message
// names the path. The report readers and `merge` throw it too (reports/report.hpp).
struct ReportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `text` (any bytes) to `path` through a temporary file in the same folder, then a rename,
// creating the folder. A reader sees the old file or the new one, never half. Throws ReportError
// naming the path.
void write_text_report(const std::string& path, const std::string& text);

}  // namespace mpscheck
