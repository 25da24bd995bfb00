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
  std::ofstream(root / "proc/cpuinfo") << "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n"
                                          "flags\t\t: fpu sse2 avx2 f16c fma avx512_bf16 amx_tile amx_bf16\n";
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
  EXPECT_EQ(p->cpu_reduced_precision(), (std::vector<std::string>{"f16c", "avx512_bf16", "amx_bf16"}));
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
  EXPECT_TRUE(p->cpu_reduced_precision().empty());
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

// ----- macOS: the commands' text, parsed here from fixture text -----
// The sysctl lines follow sysctl(8)'s "name: value" output and Apple's hw.perflevel names; the
// system_profiler entry holds the keys the command is seen to print (Apple does not document
// them); the property list is the XML form `plutil -convert xml1` writes. The values are made up.

namespace {

const char* kAppleSiliconSysctl =
    "machdep.cpu.brand_string: Apple M2 Max\n"
    "hw.model: Mac14,6\n"
    "hw.memsize: 34359738368\n"
    "hw.physicalcpu: 12\n"
    "hw.perflevel0.physicalcpu: 8\n"
    "hw.perflevel1.physicalcpu: 4\n";

const char* kDisplaysJson = R"({
  "SPDisplaysDataType" : [
    {
      "_name" : "kHW_AppleM2MaxItem",
      "spdisplays_mtlgpufamilysupport" : "spdisplays_metal3",
      "spdisplays_ndrvs" : [ { "_name" : "Color LCD" } ],
      "spdisplays_vendor" : "sppci_vendor_Apple",
      "sppci_bus" : "spdisplays_builtin",
      "sppci_cores" : "38",
      "sppci_device_type" : "spdisplays_gpu",
      "sppci_model" : "Apple M2 Max"
    }
  ]
})";

std::string version_plist(const std::string& version) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\n"
         "\t<key>BuildVersion</key>\n\t<string>7</string>\n"
         "\t<key>CFBundleShortVersionString</key>\n\t<string>" +
         version + "</string>\n\t<key>ProjectName</key>\n\t<string>Example</string>\n</dict>\n</plist>\n";
}

}  // namespace

TEST(MacFacts, SysctlLinesBecomeAMapAndOtherLinesAreSkipped) {
  const auto m = parse_sysctl_lines(std::string(kAppleSiliconSysctl) + "sysctl: unknown oid 'hw.nothing'\n\n");
  EXPECT_EQ(m.size(), 6u);
  EXPECT_EQ(m.at("machdep.cpu.brand_string"), "Apple M2 Max");
  EXPECT_EQ(m.at("hw.model"), "Mac14,6");
  EXPECT_EQ(m.count("sysctl"), 0u);
}

TEST(MacFacts, TheFirstGpuOfSystemProfilerWithItsCoresAndMetalSupport) {
  const DisplayGpu gpu = parse_displays_json(kDisplaysJson);
  EXPECT_EQ(gpu.name, "Apple M2 Max");
  EXPECT_EQ(gpu.cores, "38");
  EXPECT_EQ(gpu.metal, "Metal 3");
  // A value of another form is kept as given; a missing key stays empty; _name stands in for the model.
  const DisplayGpu other = parse_displays_json(
      R"({"SPDisplaysDataType":[{"_name":"Apple Paravirtual device","spdisplays_mtlgpufamilysupport":"Apple7"}]})");
  EXPECT_EQ(other.name, "Apple Paravirtual device");
  EXPECT_EQ(other.cores, "");
  EXPECT_EQ(other.metal, "Apple7");
  for (const char* bad : {"", "not json", "[]", R"({"SPDisplaysDataType":[]})", R"({"SPDisplaysDataType":[3]})"}) {
    const DisplayGpu none = parse_displays_json(bad);
    EXPECT_TRUE(none.name.empty() && none.cores.empty() && none.metal.empty()) << bad;
  }
}

TEST(MacFacts, APlistStringIsTheValueAfterItsKey) {
  EXPECT_EQ(plist_string(version_plist("368.12"), "CFBundleShortVersionString"), "368.12");
  EXPECT_EQ(plist_string(version_plist("368.12"), "CFBundleVersion"), "");
  EXPECT_EQ(plist_string("<key>CFBundleShortVersionString</key><integer>3</integer>", "CFBundleShortVersionString"),
            "");
  EXPECT_EQ(plist_string("", "CFBundleShortVersionString"), "");
}

TEST(MacFacts, Bfloat16OnMpsFollowsTheMacosVersion) {
  EXPECT_EQ(mps_bfloat16_text("14.0").rfind("macOS 14 or newer", 0), 0u);
  EXPECT_EQ(mps_bfloat16_text("26.1").rfind("macOS 14 or newer", 0), 0u);
  EXPECT_EQ(mps_bfloat16_text("13.6.1").rfind("no: ", 0), 0u);
  EXPECT_EQ(mps_bfloat16_text(""), "");
  EXPECT_EQ(mps_bfloat16_text("unknown"), "");
}

TEST(MacFacts, TheFactsShownAreOnlyThoseTheCommandsGave) {
  MacCommandText text;
  text.sysctl = kAppleSiliconSysctl;
  text.displays_json = kDisplaysJson;
  text.metal_plist = version_plist("368.12");
  text.mpsgraph_plist = version_plist("5.4.11");
  const auto facts = mac_machine_facts(text, "14.4");
  const std::vector<std::pair<std::string, std::string>> expected = {{"mac_model", "Mac14,6"},
                                                                     {"cpu_cores", "12 (8 performance + 4 efficiency)"},
                                                                     {"memory", "32 GiB"},
                                                                     {"gpu", "Apple M2 Max"},
                                                                     {"gpu_cores", "38"},
                                                                     {"metal_support", "Metal 3"},
                                                                     {"metal_framework", "368.12"},
                                                                     {"mpsgraph_framework", "5.4.11"},
                                                                     {"mps_bfloat16", mps_bfloat16_text("14.4")}};
  EXPECT_EQ(facts, expected);
  // An Intel Mac: no performance levels, no GPU core count; 7.5 GiB; commands that gave nothing.
  MacCommandText intel;
  intel.sysctl = "hw.model: MacBookPro16,1\nhw.memsize: 8053063680\nhw.physicalcpu: 6\n";
  const auto few = mac_machine_facts(intel, "");
  EXPECT_EQ(few, (std::vector<std::pair<std::string, std::string>>{
                     {"mac_model", "MacBookPro16,1"}, {"cpu_cores", "6"}, {"memory", "7.5 GiB"}}));
  EXPECT_TRUE(mac_machine_facts(MacCommandText{}, "").empty());
}

TEST(MacFacts, ACommandsOutputIsItsStandardOutputOnly) {
  EXPECT_EQ(command_output("printf 'hw.model: Mac14,6\\n'; echo noise >&2"), "hw.model: Mac14,6\n");
  EXPECT_EQ(command_output("/nonexistent/mpscheck-no-such-command"), "");
}

TEST(LinuxPlatform, HasNoMachineFacts) { EXPECT_TRUE(linux_platform("/")->machine_facts().empty()); }
