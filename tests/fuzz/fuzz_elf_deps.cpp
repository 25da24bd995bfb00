// libFuzzer: the ELF reader the plugin host runs on every plugin file before dlopen (issue 23
// item 8). Any bytes: dependencies or nullopt, never a crash, an overrun or a huge allocation.
#include "core/elf_deps.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/mpscheck-fuzz-elf-" + std::to_string(::getpid()) + ".so";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  if (const auto deps = mpscheck::read_elf_dependencies(path)) {
    for (const auto& n : deps->needed) (void)mpscheck::resolve_dependency(n, *deps);
  }
  return 0;
}
