// The operating system behind one interface (core/platform.hpp): the Linux implementation read
// from a fake root of the files it reads, and the real one on this machine.
#include "core/platform.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace mpscheck;
namespace fs = std::filesystem;

namespace {

fs::path fake_root(bool nvidia) {
  const fs::path root =
      fs::temp_directory_path() / ("mpscheck-root-" + std::to_string(::getpid()) + (nvidia ? "-gpu" : ""));
  fs::remove_all(root);
  for (const char* d : {"etc", "proc/sys/kernel", "proc/self", "proc/driver/nvidia"}) fs::create_directories(root / d);
  std::ofstream(root / "etc/os-release")
      << "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\n"
         "VERSION_ID=\"12\"\n";
  std::ofstream(root / "proc/sys/kernel/osrelease") << "6.1.0-18-amd64\n";
  std::ofstream(root / "proc/cpuinfo") << "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n";
  std::ofstream(root / "proc/self/maps")
      << "7f00-7f10 r-xp 00000000 08:01 1 /usr/lib/libgomp.so.1\n7f10-7f20 rw-p 00000000 00:00 0 [heap]\n"
         "7f20-7f30 r-xp 00000000 08:01 2 /opt/torch/lib/libtorch_cpu.so\n";
  if (nvidia)
    std::ofstream(root / "proc/driver/nvidia/version")
        << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
           "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
  return root;
}

}  // namespace

TEST(LinuxPlatform, ReadsTheOsTheCpuTheDriverAndTheLoadedLibrariesFromItsRoot) {
  const fs::path root = fake_root(true);
  const auto p = linux_platform(root.string());
  EXPECT_EQ(p->os_description(), "Debian GNU/Linux 12 (bookworm) (Linux 6.1.0-18-amd64)");
  EXPECT_EQ(p->os_version(), "12");
  EXPECT_EQ(p->os_build(), "6.1.0-18-amd64");
  EXPECT_EQ(p->cpu_model(), "AMD EPYC 7B13");
  EXPECT_EQ(p->gpu_driver(), "NVIDIA 550.54.15");
  EXPECT_EQ(p->loaded_libraries(),
            (std::vector<std::string>{"/opt/torch/lib/libtorch_cpu.so", "/usr/lib/libgomp.so.1"}));
  fs::remove_all(root);
}

TEST(LinuxPlatform, WhatIsMissingIsEmptyOrUnknown) {
  const fs::path root = fake_root(false);
  fs::remove(root / "proc/cpuinfo");
  const auto p = linux_platform(root.string());
  EXPECT_EQ(p->gpu_driver(), "");
  EXPECT_EQ(p->cpu_model(), "unknown");
  fs::remove_all(root);
  const auto none = linux_platform(root.string());
  EXPECT_EQ(none->os_description(), "");
  EXPECT_EQ(none->os_version(), "");
  EXPECT_TRUE(none->loaded_libraries().empty());
}

#if defined(__linux__)
TEST(LinuxPlatform, TheCurrentOneIsThisMachine) {
  const Platform& p = current_platform();
  EXPECT_NE(p.os_description().find("Linux"), std::string::npos);
  EXPECT_FALSE(p.os_build().empty());
  EXPECT_NE(p.cpu_model(), "");
  bool has_libc = false;
  for (const auto& l : p.loaded_libraries())
    has_libc |= l.find("libc.so") != std::string::npos || l.find("libc-") != std::string::npos;
  EXPECT_TRUE(has_libc);
}
#endif
