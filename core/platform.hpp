// What the environment block asks of the operating system, behind one interface: a Linux
// implementation that reads the files the kernel and the distribution provide (tested here against
// a fake root), and a macOS one that asks sysctl and dyld (never run here; docs/devices.md, "On a
// Mac"). What a Mac says of its chip, GPU and Metal comes from three programs whose text the plain parse functions
// below read; those are tested here on fixture text, and only running the commands is Mac-only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mpscheck {

class Platform {
 public:
  virtual ~Platform() = default;
  // "Debian GNU/Linux 12 (bookworm) (Linux 6.1.0 x86_64)", "macOS 15.3".
  virtual std::string os_description() const = 0;
  // What expectation lines compare with (os>=14.4): "12", "15.3"; empty where unknown.
  virtual std::string os_version() const = 0;
  // The OS build: macOS's ("24D60"), Linux's kernel release ("6.1.0-18-amd64").
  virtual std::string os_build() const = 0;
  // "AMD EPYC 7B13", "Apple M2 Max"; "unknown" where neither says.
  virtual std::string cpu_model() const = 0;
  // The CPU's float16/bfloat16 arithmetic and conversion features, in the kernel's (Linux
  // /proc/cpuinfo) or sysctl's (macOS) words, among those that change how LibTorch's CPU kernels
  // compute in those dtypes ("f16c", "avx512_bf16", "amx_bf16"; "bf16", "fphp" on Arm); empty when
  // it has none or does not say.
  virtual std::vector<std::string> cpu_reduced_precision() const = 0;
  // The GPU driver's version where one is installed (Linux: NVIDIA's kernel module); empty otherwise.
  virtual std::string gpu_driver() const = 0;
  // Every shared library loaded in this process.
  virtual std::vector<std::string> loaded_libraries() const = 0;
  // What the machine says of its chip, GPU and Metal (macOS); each entry is known, never guessed.
  // Empty on Linux, whose CPU and GPU driver the fields above hold.
  virtual std::vector<std::pair<std::string, std::string>> machine_facts() const { return {}; }
};

// The platform this process runs on.
const Platform& current_platform();

// Linux, reading ROOT/etc/os-release, ROOT/proc/cpuinfo, ROOT/proc/sys/kernel/osrelease,
// ROOT/proc/driver/nvidia/version and ROOT/proc/self/maps ("/" for the real ones; a folder of
// fixture files in tests).
std::unique_ptr<Platform> linux_platform(const std::string& root = "/");

// ----- macOS: the text of sysctl, system_profiler and plutil, parsed by plain functions -----

// What the macOS implementation reads, each the full standard output of one command (empty when it
// could not run):
struct MacCommandText {
  // `sysctl machdep.cpu.brand_string hw.model hw.memsize hw.physicalcpu hw.perflevel0.physicalcpu
  // hw.perflevel1.physicalcpu`: one "name: value" line per name sysctl knows.
  std::string sysctl;
  // `system_profiler SPDisplaysDataType -json`.
  std::string displays_json;
  // `plutil -convert xml1 -o - .../Metal.framework/Versions/A/Resources/version.plist`, and the same
  // for MetalPerformanceShadersGraph.framework.
  std::string metal_plist, mpsgraph_plist;
};

// "name: value" lines (sysctl's output without -n) as a map; other lines are skipped.
std::map<std::string, std::string> parse_sysctl_lines(const std::string& text);

// The first GPU of `system_profiler SPDisplaysDataType -json`; each field empty where the entry
// lacks it. Apple does not document these keys: `sppci_model`, `_name`, `sppci_cores` and
// `spdisplays_mtlgpufamilysupport` ("spdisplays_metal3") are what the command is seen to print.
struct DisplayGpu {
  std::string name;   // "Apple M2 Max"
  std::string cores;  // "38"
  std::string metal;  // "Metal 3" from "spdisplays_metal3"; any other value as the command gave it
};
DisplayGpu parse_displays_json(const std::string& json);

// The <string> after <key>KEY</key> in an XML property list; empty if there is none.
std::string plist_string(const std::string& xml, const std::string& key);

// Whether this macOS version ("13.6.1", "14.4") is one on which PyTorch's MPS backend takes
// bfloat16: from macOS 14 (pytorch/pytorch#119641; its error below that says "MPS bfloat16 type is
// supported on MacOS 14.0 or newer"). The OS is necessary, not sufficient: a hosted runner's
// paravirtual GPU lacks bfloat16 on images past macOS 14 (docs/devices.md, "On a Mac"). Empty for a
// version it cannot read.
std::string mps_bfloat16_text(const std::string& macos_version);

// The facts the environment block shows for a Mac, in order, from the commands' text and the macOS
// version; a fact the text does not give is left out.
std::vector<std::pair<std::string, std::string>> mac_machine_facts(const MacCommandText& text,
                                                                   const std::string& macos_version);

// The standard output of `command` run through /bin/sh (its standard error discarded); empty when it
// cannot start. At most 1 MB.
std::string command_output(const std::string& command);

}  // namespace mpscheck
