// Every case a run can see: the plugins' workloads, OpInfo's recorded samples (an export in a plugin
// folder, core/opinfo_cases.hpp) and the user's own TorchScript model, loaded
// the same way by the host (to select and plan) and by each worker (to run), so both agree on
// which ids exist.
#pragma once

#include "core/opinfo_cases.hpp"
#include "core/plugin_host.hpp"
#include "core/registry.hpp"

#include <memory>
#include <string>
#include <vector>

namespace mpscheck {

struct CatalogSource {
  bool default_plugins = true;           // the plugins shipped next to the binary
  std::vector<std::string> plugin_dirs;  // absolute
  std::string model;                     // --model FILE.pt, absolute; empty: none
  std::vector<std::string> inputs;       // its --input specs
  bool train = false;
  std::vector<std::string> model_for;  // its --model-for DTYPE=FILE, FILE absolute
  std::string eager;                   // --eager FILE.pt, absolute, for a .pt2 --model; empty: none
  bool validate_model = false;         // the host checks the model once, up front, with a clear message
};

// Owns the loaded plugins for the life of the process (they are never unloaded).
class CaseCatalog {
 public:
  // Throws UntrustedPlugin, PluginLoadError (naming the folder), BadModelInput and
  // DuplicateCaseId; each message is one line for the user.
  explicit CaseCatalog(const CatalogSource& source);

  const Registry& registry() const { return *registry_; }
  const PluginHost& host() const { return host_; }

 private:
  PluginHost host_;
  std::vector<std::unique_ptr<Workload>> builtin_;
  // The OpInfo exports found in the plugin folders, their workloads and their stand-in plugin records.
  std::vector<std::unique_ptr<OpInfoCalls>> opinfo_;
  std::vector<std::unique_ptr<PluginInfo>> opinfo_info_;
  std::vector<std::unique_ptr<Workload>> opinfo_workloads_;
  std::unique_ptr<Registry> registry_;
};

}  // namespace mpscheck
