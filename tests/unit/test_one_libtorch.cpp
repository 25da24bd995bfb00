// One LibTorch per process (issue 23 item 8): a plugin file that links another LibTorch is refused
// from its ELF dependencies, in one line naming the file and both LibTorch locations, and never
// loaded (loading the fixture's fake libc10.so.1.13 aborts the process).
#include "core/elf_deps.hpp"
#include "core/plugin_host.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace mpscheck;
namespace fs = std::filesystem;

namespace {
const std::string kFixtures = MPSCHECK_FIXTURES_DIR;
const std::string kOther = kFixtures + "/fixture_links_other_libtorch/fixture_links_other_libtorch.so";

// The libc10 this test process runs on, as the loader mapped it.
std::string host_libc10() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash != std::string::npos && fs::path(line.substr(slash)).filename() == "libc10.so") return line.substr(slash);
  }
  return {};
}
}  // namespace

TEST(OneLibTorch, APluginLinkingAnotherLibc10IsRefusedBeforeItLoads) {
  const std::string ours = host_libc10();
  ASSERT_FALSE(ours.empty()) << "the unit tests link LibTorch";
  PluginHost host;
  std::string message;
  try {
    host.load_file(kOther);
  } catch (const PluginLoadError& e) {
    message = e.what();
  }
  ASSERT_FALSE(message.empty()) << "the file was accepted";
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.rfind(kOther + ": links libc10.so.1.13 (", 0), 0u) << message;
  const std::string theirs = fs::canonical(kFixtures + "/other_libtorch/lib").string() + "/libc10.so.1.13";
  EXPECT_NE(message.find(theirs), std::string::npos) << message;
  EXPECT_NE(message.find(ours), std::string::npos) << message;
  EXPECT_TRUE(host.plugins().empty());
}

TEST(OneLibTorch, TheSameFileInAFolderIsSkippedWithThatReason) {
  const fs::path dir = fs::temp_directory_path() / "mpscheck-one-libtorch";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // The copy loses the fixture's RUNPATH target only if $ORIGIN were used; the build RUNPATH is absolute.
  fs::copy_file(kOther, dir / "b_other.so");
  fs::copy_file(kFixtures + "/fixture_not_a_plugin/fixture_not_a_plugin.so", dir / "a_not_a_plugin.so");
  PluginHost host;
  host.load_directory(dir);
  ASSERT_EQ(host.warnings().size(), 2u);
  EXPECT_NE(host.warnings()[1].find("b_other.so: links libc10.so.1.13"), std::string::npos) << host.warnings()[1];
  fs::remove_all(dir);
}

TEST(ElfDependencies, ReadsNeededAndRunpathWithoutLoading) {
  const auto deps = read_elf_dependencies(kOther);
  ASSERT_TRUE(deps.has_value());
  EXPECT_NE(std::find(deps->needed.begin(), deps->needed.end(), "libc10.so.1.13"), deps->needed.end());
  const std::string dir = fs::canonical(kFixtures + "/other_libtorch/lib").string();
  bool listed = false;
  for (const auto& d : deps->rpath.empty() ? deps->runpath : deps->rpath) listed |= fs::canonical(d).string() == dir;
  EXPECT_TRUE(listed);
  EXPECT_EQ(fs::canonical(resolve_dependency("libc10.so.1.13", *deps)).string(), dir + "/libc10.so.1.13");
  EXPECT_EQ(resolve_dependency("libnothing-such.so.7", *deps), "");
}

TEST(ElfDependencies, APluginOfThisBuildNamesTheHostsOwnLibTorch) {
  const auto deps = read_elf_dependencies(std::string(MPSCHECK_TEST_PLUGINS_DIR) + "/mpscheck_faults.so");
  ASSERT_TRUE(deps.has_value());
  bool c10 = false;
  for (const auto& n : deps->needed) {
    if (n.rfind("libc10", 0) == 0 || n.rfind("libtorch", 0) == 0) {
      EXPECT_EQ(n.find(".so."), std::string::npos) << "a versioned LibTorch soname: " << n;
    }
    c10 |= n == "libc10.so";
  }
  EXPECT_TRUE(c10);
}

TEST(ElfDependencies, AnythingElseIsNotReadAndNeverCrashes) {
  const fs::path dir = fs::temp_directory_path() / "mpscheck-elf-junk";
  fs::create_directories(dir);
  std::ifstream real(kOther, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(real)), std::istreambuf_iterator<char>());
  // Every truncation of a real file, then garbage with an ELF magic.
  for (std::size_t n :
       {std::size_t{0}, std::size_t{3}, std::size_t{20}, std::size_t{64}, std::size_t{200}, bytes.size() / 2}) {
    std::ofstream(dir / "cut.so", std::ios::binary) << bytes.substr(0, n);
    EXPECT_NO_THROW(read_elf_dependencies(dir / "cut.so")) << n;
  }
  std::string junk =
      "\x7f"
      "ELF\x02\x01";
  junk += std::string(4096, '\xff');
  std::ofstream(dir / "junk.so", std::ios::binary) << junk;
  EXPECT_FALSE(read_elf_dependencies(dir / "junk.so").has_value());
  EXPECT_FALSE(read_elf_dependencies(dir / "missing.so").has_value());
  fs::remove_all(dir);
}
