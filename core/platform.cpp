#include "core/platform.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
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
  // The first "flags" (x86) or "Features" (Arm) line, filtered to the reduced-precision features.
  std::vector<std::string> cpu_reduced_precision() const override {
    static const std::set<std::string> kKnown = {"f16c",           "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_fp16",
                                                 "avx_ne_convert", "bf16",        "fphp",        "asimdhp"};
    std::ifstream in(root_ + "proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
      std::vector<std::string> found;
      std::istringstream words(line.substr(line.find(':') == std::string::npos ? line.size() : line.find(':') + 1));
      for (std::string w; words >> w;)
        if (kKnown.count(w)) found.push_back(w);
      return found;
    }
    return {};
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

// "12 (8 performance + 4 efficiency)" from sysctl's core counts: perflevel0 is the performance
// cores and perflevel1 the efficiency ones on Apple silicon (Apple's documentation of the
// hw.perflevel names); an Intel Mac has neither, and gets the count alone.
std::string cpu_cores_text(const std::map<std::string, std::string>& sysctl) {
  const auto get = [&](const char* key) {
    const auto it = sysctl.find(key);
    return it == sysctl.end() ? std::string() : it->second;
  };
  const std::string total = get("hw.physicalcpu"), fast = get("hw.perflevel0.physicalcpu"),
                    slow = get("hw.perflevel1.physicalcpu");
  if (total.empty()) return {};
  if (fast.empty() || slow.empty()) return total;
  return fmt::format("{} ({} performance + {} efficiency)", total, fast, slow);
}

// hw.memsize (bytes) as GiB: "32 GiB", "7.5 GiB".
std::string memory_text(const std::string& bytes) {
  try {
    std::size_t used = 0;
    const double b = static_cast<double>(std::stoull(bytes, &used));
    if (used != bytes.size()) return {};
    const double gib = b / (1024.0 * 1024.0 * 1024.0);
    return gib == static_cast<double>(static_cast<long long>(gib)) ? fmt::format("{} GiB", static_cast<long long>(gib))
                                                                   : fmt::format("{:.1f} GiB", gib);
  } catch (const std::exception&) {
    return {};
  }
}

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
  std::vector<std::string> cpu_reduced_precision() const override {
    std::vector<std::string> found;
    using Feature = std::pair<const char*, const char*>;  // our word, sysctl's name
    for (const Feature& f :
         {Feature{"bf16", "hw.optional.arm.FEAT_BF16"}, Feature{"fp16", "hw.optional.arm.FEAT_FP16"}}) {
      int on = 0;
      size_t len = sizeof on;
      if (sysctlbyname(f.second, &on, &len, nullptr, 0) == 0 && on == 1) found.push_back(f.first);
    }
    return found;
  }
  std::string gpu_driver() const override { return {}; }  // Metal is part of the OS: os_build says which
  std::vector<std::string> loaded_libraries() const override {
    std::set<std::string> libs;
    for (uint32_t i = 0; i < _dyld_image_count(); ++i) libs.insert(_dyld_get_image_name(i));
    return {libs.begin(), libs.end()};
  }
  // Never run here: the four commands, once per process (system_profiler is not instant).
  std::vector<std::pair<std::string, std::string>> machine_facts() const override {
    static const auto facts = [this] {
      const std::string frameworks = "/usr/bin/plutil -convert xml1 -o - /System/Library/Frameworks/";
      MacCommandText text;
      text.sysctl = command_output(
          "/usr/sbin/sysctl machdep.cpu.brand_string hw.model hw.memsize hw.physicalcpu hw.perflevel0.physicalcpu "
          "hw.perflevel1.physicalcpu");
      text.displays_json = command_output("/usr/sbin/system_profiler SPDisplaysDataType -json");
      text.metal_plist = command_output(frameworks + "Metal.framework/Versions/A/Resources/version.plist");
      text.mpsgraph_plist =
          command_output(frameworks + "MetalPerformanceShadersGraph.framework/Versions/A/Resources/version.plist");
      return mac_machine_facts(text, os_version());
    }();
    return facts;
  }
};
#endif

}  // namespace

std::map<std::string, std::string> parse_sysctl_lines(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(": ");
    // A sysctl name is dotted and has no space ("hw.memsize"); its own messages ("sysctl: unknown
    // oid ...", on standard error anyway) are not.
    if (colon == std::string::npos || line.find(' ') < colon || line.find('.') > colon) continue;
    std::string value = line.substr(colon + 2);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.pop_back();
    if (!value.empty()) out[line.substr(0, colon)] = value;
  }
  return out;
}

DisplayGpu parse_displays_json(const std::string& json) {
  DisplayGpu gpu;
  const auto doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return gpu;
  const auto list = doc.find("SPDisplaysDataType");
  if (list == doc.end() || !list->is_array() || list->empty() || !(*list)[0].is_object()) return gpu;
  const auto& entry = (*list)[0];
  const auto text = [&](const char* key) {
    const auto it = entry.find(key);
    return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  gpu.name = text("sppci_model").empty() ? text("_name") : text("sppci_model");
  gpu.cores = text("sppci_cores");
  gpu.metal = text("spdisplays_mtlgpufamilysupport");
  std::smatch m;
  if (std::regex_match(gpu.metal, m, std::regex("spdisplays_metal([0-9]+)"))) gpu.metal = "Metal " + m[1].str();
  return gpu;
}

std::string plist_string(const std::string& xml, const std::string& key) {
  const std::string open = "<key>" + key + "</key>";
  const auto at = xml.find(open);
  if (at == std::string::npos) return {};
  std::size_t p = xml.find_first_not_of(" \t\r\n", at + open.size());
  if (p == std::string::npos || xml.compare(p, 8, "<string>") != 0) return {};
  p += 8;
  const auto end = xml.find("</string>", p);
  return end == std::string::npos ? std::string() : xml.substr(p, end - p);
}

std::string mps_bfloat16_text(const std::string& macos_version) {
  std::smatch m;
  if (!std::regex_match(macos_version, m, std::regex(R"(([0-9]{1,3})(\.[0-9]+)*)"))) return {};
  return std::stoi(m[1].str()) >= 14
             ? "macOS 14 or newer, as PyTorch's MPS backend needs (the device may still lack it)"
             : "no: PyTorch's MPS backend needs macOS 14 for bfloat16";
}

std::vector<std::pair<std::string, std::string>> mac_machine_facts(const MacCommandText& text,
                                                                   const std::string& macos_version) {
  std::vector<std::pair<std::string, std::string>> facts;
  const auto add = [&](const char* key, const std::string& value) {
    if (!value.empty()) facts.emplace_back(key, value);
  };
  const auto sysctl = parse_sysctl_lines(text.sysctl);
  const auto get = [&](const char* key) {
    const auto it = sysctl.find(key);
    return it == sysctl.end() ? std::string() : it->second;
  };
  add("mac_model", get("hw.model"));
  add("cpu_cores", cpu_cores_text(sysctl));
  add("memory", memory_text(get("hw.memsize")));
  const DisplayGpu gpu = parse_displays_json(text.displays_json);
  add("gpu", gpu.name);
  add("gpu_cores", gpu.cores);
  add("metal_support", gpu.metal);
  add("metal_framework", plist_string(text.metal_plist, "CFBundleShortVersionString"));
  add("mpsgraph_framework", plist_string(text.mpsgraph_plist, "CFBundleShortVersionString"));
  add("mps_bfloat16", mps_bfloat16_text(macos_version));
  return facts;
}

std::string command_output(const std::string& command) {
  std::FILE* pipe = ::popen(("exec 2>/dev/null; " + command).c_str(), "r");
  if (!pipe) return {};
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0 && out.size() < (1u << 20);) out.append(buf, n);
  ::pclose(pipe);
  return out;
}

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
