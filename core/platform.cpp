#include "core/platform.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sys/utsname.h>

#ifdef __APPLE__
#include <mach-o/dyld.h>
#include <sys/sysctl.h>
#endif

namespace mpscheck {

namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// KEY="value" from an os-release file.
std::string os_release(const std::string& root, const char* key) {
  std::ifstream os(root + "etc/os-release");
  const std::string prefix = std::string(key) + "=";
  for (std::string line; std::getline(os, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::string v = line.substr(prefix.size());
    v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
    return v;
  }
  return {};
}

class LinuxPlatform final : public Platform {
 public:
  explicit LinuxPlatform(std::string root) : root_(root.empty() || root.back() != '/' ? root + "/" : root) {}
  std::string os_description() const override {
    const std::string pretty = os_release(root_, "PRETTY_NAME");
    const std::string kernel = kernel_text();
    if (kernel.empty()) return pretty;
    return pretty.empty() ? kernel : pretty + " (" + kernel + ")";
  }
  std::string os_version() const override { return os_release(root_, "VERSION_ID"); }
  std::string os_build() const override { return first_line(root_ + "proc/sys/kernel/osrelease"); }
  std::string cpu_model() const override {
    std::ifstream in(root_ + "proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("model name", 0) == 0) {
        const auto colon = line.find(':');
        if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
      }
    }
    return "unknown";
  }
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024".
  std::string gpu_driver() const override {
    const std::string line = first_line(root_ + "proc/driver/nvidia/version");
    const auto module = line.find("Kernel Module");
    if (module == std::string::npos) return {};
    const auto begin = line.find_first_not_of(' ', module + std::strlen("Kernel Module"));
    if (begin == std::string::npos) return {};
    const auto end = line.find(' ', begin);
    return "NVIDIA " + line.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  }
  std::vector<std::string> loaded_libraries() const override {
    std::set<std::string> libs;
    std::ifstream maps(root_ + "proc/self/maps");
    for (std::string line; std::getline(maps, line);)
      if (const auto slash = line.find('/'); slash != std::string::npos) libs.insert(line.substr(slash));
    return {libs.begin(), libs.end()};
  }

 private:
  // The running kernel's name, release and machine: the fake root's osrelease when it has one.
  std::string kernel_text() const {
    if (root_ != "/") {
      const std::string release = first_line(root_ + "proc/sys/kernel/osrelease");
      return release.empty() ? std::string() : "Linux " + release;
    }
    utsname u{};
    return uname(&u) == 0 ? fmt::format("{} {} {}", u.sysname, u.release, u.machine) : std::string();
  }
  std::string root_;
};

#ifdef __APPLE__
std::string sysctl_string(const char* name) {
  char buf[256];
  size_t len = sizeof buf;
  if (sysctlbyname(name, buf, &len, nullptr, 0) == 0) return std::string(buf, strnlen(buf, len));
  return {};
}

// Never run here: sysctl's product version, build and CPU brand, and dyld's image list.
class MacPlatform final : public Platform {
 public:
  std::string os_description() const override { return "macOS " + sysctl_string("kern.osproductversion"); }
  std::string os_version() const override { return sysctl_string("kern.osproductversion"); }
  std::string os_build() const override { return sysctl_string("kern.osversion"); }
  std::string cpu_model() const override {
    const std::string brand = sysctl_string("machdep.cpu.brand_string");
    return brand.empty() ? "unknown" : brand;
  }
  std::string gpu_driver() const override { return {}; }  // Metal is part of the OS: os_build says which
  std::vector<std::string> loaded_libraries() const override {
    std::set<std::string> libs;
    for (uint32_t i = 0; i < _dyld_image_count(); ++i) libs.insert(_dyld_get_image_name(i));
    return {libs.begin(), libs.end()};
  }
};
#endif

}  // namespace

std::unique_ptr<Platform> linux_platform(const std::string& root) { return std::make_unique<LinuxPlatform>(root); }

const Platform& current_platform() {
#ifdef __APPLE__
  static const MacPlatform platform;
  return platform;
#else
  static const std::unique_ptr<Platform> platform = linux_platform("/");
  return *platform;
#endif
}

}  // namespace mpscheck
