#include "util/atomic_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

// No fmt here: util/ depends on the standard library (and nlohmann::json) alone.

namespace mpscheck {

void write_text_report(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  // Unique per process so two runs writing the same report never share a temporary file.
  const std::string tmp = path + ".tmp." + std::to_string(static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      const std::string why = std::strerror(errno);  // before anything else can set errno
      throw ReportError("cannot write the report " + path + ": " + why + " (check the folder exists and is writable)");
    }
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      throw ReportError("writing the report " + path + " failed (disk full?)");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw ReportError("cannot move the report into place at " + path + ": " + ec.message());
  }
}

std::string not_a_file_reason(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return "no such file";
  if (std::filesystem::is_directory(status)) return "is a folder, not a file";
  if (!std::filesystem::is_regular_file(status)) return "is not a regular file (a device, pipe or socket)";
  return {};
}

}  // namespace mpscheck
