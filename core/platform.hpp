// What the environment block asks of the operating system, behind one interface: a Linux
// implementation that reads the files the kernel and the distribution provide (tested here against
// a fake root), and a macOS one that asks sysctl and dyld (never run here; see README).
#pragma once

#include <memory>
#include <string>
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
  // The GPU driver's version where one is installed (Linux: NVIDIA's kernel module); empty otherwise.
  virtual std::string gpu_driver() const = 0;
  // Every shared library loaded in this process.
  virtual std::vector<std::string> loaded_libraries() const = 0;
};

// The platform this process runs on.
const Platform& current_platform();

// Linux, reading ROOT/etc/os-release, ROOT/proc/cpuinfo, ROOT/proc/sys/kernel/osrelease,
// ROOT/proc/driver/nvidia/version and ROOT/proc/self/maps ("/" for the real ones; a folder of
// fixture files in tests).
std::unique_ptr<Platform> linux_platform(const std::string& root = "/");

}  // namespace mpscheck
