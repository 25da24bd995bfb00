// libFuzzer: report JSON as `compare`, `merge`, `--baseline` and `repro --from` read it. Any file
// either reads or is a ReportError; what reads can be compared with itself and merged.
#include "core/workflow.hpp"
#include "reports/report.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {
// The readers take a path, as the CLI gives them; one file per process, rewritten per input.
struct ScratchFile {
  std::string path = "/tmp/mpscheck-fuzz-report-" + std::to_string(::getpid()) + ".json";
  ~ScratchFile() { std::remove(path.c_str()); }
};
const std::string& scratch_path() {
  static const ScratchFile file;
  return file.path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(scratch_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const mpscheck::RunReport r = mpscheck::read_json_report(scratch_path());
    const mpscheck::Comparison c = mpscheck::compare_reports(r, r);
    mpscheck::format_comparison(c, "old.json", "new.json");
    mpscheck::merge_reports({scratch_path()});
    mpscheck::merge_reports({scratch_path(), scratch_path()});  // a second shard: the target check, duplicates
  } catch (const mpscheck::ReportError&) {
  }
  return 0;
}
