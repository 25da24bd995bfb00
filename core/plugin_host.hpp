// Loads plugin modules with Boost.DLL and keeps them loaded for the life of the process.
#pragma once

#include <mpscheck/workload.hpp>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

struct PluginInfo {
  std::string path;
  std::string name;
  std::string version;
};

// A workload and the plugin it came from.
struct RegisteredWorkload {
  const Workload* workload = nullptr;
  const PluginInfo* plugin = nullptr;
};

struct PluginLoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A plugin file or folder that others could have written: never loaded, and the run stops.
struct UntrustedPlugin : PluginLoadError {
  using PluginLoadError::PluginLoadError;
};

// Throws UntrustedPlugin when `path` is world-writable or owned by someone other than the
// effective user or root; the message names the path and the command that fixes it.
void check_plugin_trust(const std::filesystem::path& path);

// A function a loaded plugin exports with C linkage under `name`, beside its descriptor (an optional
// extra, as a device plugin's `mpscheck_device_name`); null when no loaded plugin exports one.
void* find_plugin_function(const char* name);

class PluginHost {
 public:
  PluginHost();
  ~PluginHost();
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  // Loads one file. Throws PluginLoadError with a sentence naming the file and the reason
  // (UntrustedPlugin before anything is loaded, for a file others could have written).
  void load_file(const std::filesystem::path& file);
  // Loads every *.so / *.dylib in `dir` (sorted by name). A file that fails is skipped and its
  // reason kept in warnings(); the others still load. A missing folder throws PluginLoadError;
  // an untrusted folder or file throws UntrustedPlugin.
  void load_directory(const std::filesystem::path& dir);

  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::vector<std::unique_ptr<PluginInfo>>& plugins() const { return plugins_; }
  std::vector<RegisteredWorkload> workloads() const;

  // The folder of plugins that ships next to the executable (build/plugins, or
  // <prefix>/lib/mpscheck/plugins once installed); empty if neither exists.
  static std::filesystem::path default_plugin_dir();
  // Stands in as the plugin of workloads built into the host (the user's TorchScript model).
  static const PluginInfo& builtin_info();

 private:
  struct Entry;
  std::vector<std::unique_ptr<PluginInfo>> plugins_;
  std::vector<std::pair<const PluginInfo*, std::unique_ptr<Workload>>> workloads_;
  std::vector<std::string> warnings_;
};

}  // namespace mpscheck
