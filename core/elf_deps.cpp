#include "core/elf_deps.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace mpscheck {

namespace fs = std::filesystem;

namespace {

// ELF64 layout (the <elf.h> structures, read field by field so a hostile file cannot overrun).
constexpr std::uint32_t kPtLoad = 1, kPtDynamic = 2;
constexpr std::int64_t kDtNull = 0, kDtNeeded = 1, kDtStrtab = 5, kDtStrsz = 10, kDtRpath = 15, kDtRunpath = 29;

template <typename T>
bool read_at(std::ifstream& in, std::uint64_t offset, T* out) {
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(out), sizeof(T));
  return static_cast<std::size_t>(in.gcount()) == sizeof(T);
}

std::vector<std::string> split_paths(const std::string& list, const fs::path& origin) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    std::size_t end = list.find(':', begin);
    if (end == std::string::npos) end = list.size();
    std::string dir = list.substr(begin, end - begin);
    for (const char* token : {"${ORIGIN}", "$ORIGIN"}) {
      for (auto at = dir.find(token); at != std::string::npos; at = dir.find(token))
        dir.replace(at, std::strlen(token), origin.string());
    }
    if (!dir.empty()) out.push_back(dir);
    begin = end + 1;
  }
  return out;
}

}  // namespace

std::optional<ElfDependencies> read_elf_dependencies(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  unsigned char ident[16];
  if (!read_at(in, 0, &ident)) return std::nullopt;
  // 64-bit (EI_CLASS 2), little-endian (EI_DATA 1): every platform LibTorch ships for on Linux.
  if (std::memcmp(ident,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      ident[4] != 2 || ident[5] != 1)
    return std::nullopt;
  std::uint64_t phoff = 0;
  std::uint16_t phentsize = 0, phnum = 0;
  if (!read_at(in, 32, &phoff) || !read_at(in, 54, &phentsize) || !read_at(in, 56, &phnum)) return std::nullopt;
  if (phentsize < 56) return std::nullopt;

  struct Load {
    std::uint64_t offset, vaddr, filesz;
  };
  std::vector<Load> loads;
  std::uint64_t dyn_offset = 0, dyn_size = 0;
  for (std::uint16_t i = 0; i < phnum; ++i) {
    const std::uint64_t ph = phoff + std::uint64_t{i} * phentsize;
    std::uint32_t type = 0;
    std::uint64_t offset = 0, vaddr = 0, filesz = 0;
    if (!read_at(in, ph, &type) || !read_at(in, ph + 8, &offset) || !read_at(in, ph + 16, &vaddr) ||
        !read_at(in, ph + 32, &filesz))
      return std::nullopt;
    if (type == kPtLoad) loads.push_back({offset, vaddr, filesz});
    if (type == kPtDynamic) dyn_offset = offset, dyn_size = filesz;
  }
  if (dyn_size == 0) return std::nullopt;

  std::vector<std::uint64_t> needed;
  std::optional<std::uint64_t> rpath, runpath;
  std::uint64_t strtab = 0, strsz = 0;
  for (std::uint64_t at = dyn_offset; at + 16 <= dyn_offset + dyn_size; at += 16) {
    std::int64_t tag = 0;
    std::uint64_t value = 0;
    if (!read_at(in, at, &tag) || !read_at(in, at + 8, &value)) return std::nullopt;
    if (tag == kDtNull) break;
    if (tag == kDtNeeded) needed.push_back(value);
    if (tag == kDtStrtab) strtab = value;
    if (tag == kDtStrsz) strsz = value;
    if (tag == kDtRpath) rpath = value;
    if (tag == kDtRunpath) runpath = value;
  }
  // DT_STRTAB is an address: the file offset is found through the segment that maps it.
  std::optional<std::uint64_t> strtab_offset;
  for (const Load& l : loads)
    if (strtab >= l.vaddr && strtab < l.vaddr + l.filesz) strtab_offset = strtab - l.vaddr + l.offset;
  if (!strtab_offset || strsz == 0 || strsz > (std::uint64_t{64} << 20)) return std::nullopt;
  std::string strings(strsz, '\0');
  in.clear();
  in.seekg(static_cast<std::streamoff>(*strtab_offset));
  in.read(strings.data(), static_cast<std::streamsize>(strsz));
  if (static_cast<std::uint64_t>(in.gcount()) != strsz) return std::nullopt;
  auto string_at = [&](std::uint64_t index) -> std::string {
    if (index >= strings.size()) return {};
    return std::string(strings.c_str() + index, strnlen(strings.c_str() + index, strings.size() - index));
  };

  ElfDependencies deps;
  const fs::path origin = fs::absolute(file).parent_path();
  for (std::uint64_t n : needed) deps.needed.push_back(string_at(n));
  if (rpath) deps.rpath = split_paths(string_at(*rpath), origin);
  if (runpath) deps.runpath = split_paths(string_at(*runpath), origin);
  return deps;
}

std::string resolve_dependency(const std::string& needed, const ElfDependencies& deps) {
  std::error_code ec;
  if (needed.find('/') != std::string::npos) return fs::exists(needed, ec) ? needed : std::string();
  std::vector<std::string> dirs;
  if (deps.runpath.empty()) dirs.insert(dirs.end(), deps.rpath.begin(), deps.rpath.end());
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    const auto more = split_paths(ld, fs::path());
    dirs.insert(dirs.end(), more.begin(), more.end());
  }
  dirs.insert(dirs.end(), deps.runpath.begin(), deps.runpath.end());
  // ld.so.cache lists what these folders hold on Debian and most distributions.
  for (const char* d : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                        "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"})
    dirs.emplace_back(d);
  for (const auto& d : dirs) {
    const fs::path candidate = fs::path(d) / needed;
    if (fs::exists(candidate, ec)) return candidate.string();
  }
  return {};
}

}  // namespace mpscheck
