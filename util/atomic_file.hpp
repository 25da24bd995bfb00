// The one atomic file writer, for every report and the reference cache's entries, the error it
// throws, and the one answer to why a path named as an input file is not one. Generic: a path and
// bytes in, no knowledge of what the file holds.
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

// Why `path` cannot be read as a file: "no such file", "is a folder, not a file" or "is not a
// regular file (a device, pipe or socket)"; empty for a regular file (or a link to one).
std::string not_a_file_reason(const std::string& path);

}  // namespace mpscheck
