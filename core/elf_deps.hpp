// The dynamic dependencies of an ELF shared object, read from the file without loading it: what
// the host must know about a plugin before dlopen runs its constructors (a plugin that links
// another LibTorch dies inside dlopen, issue 23 item 8).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mpscheck {

struct ElfDependencies {
  std::vector<std::string> needed;   // DT_NEEDED, in order
  std::vector<std::string> rpath;    // DT_RPATH, split on ':' ($ORIGIN expanded)
  std::vector<std::string> runpath;  // DT_RUNPATH, split on ':' ($ORIGIN expanded)
};

// The dependencies of a 64-bit little-endian ELF file; nullopt when the file is not one (another
// format, truncated, or no dynamic section): the loader then gives its own reason.
std::optional<ElfDependencies> read_elf_dependencies(const std::filesystem::path& file);

// Where the dynamic loader would find `needed` for an object with these dependencies: the path
// itself if it holds a '/', else the first existing file in DT_RPATH (only without DT_RUNPATH),
// LD_LIBRARY_PATH, DT_RUNPATH, then the default folders. Empty when none exists.
std::string resolve_dependency(const std::string& needed, const ElfDependencies& deps);

}  // namespace mpscheck
