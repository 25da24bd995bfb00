#include "core/case_catalog.hpp"

#include "core/pt2_workload.hpp"
#include "core/torchscript_workload.hpp"

namespace mpscheck {

CaseCatalog::CaseCatalog(const CatalogSource& source) {
  std::vector<std::string> dirs;
  if (source.default_plugins) {
    const auto d = PluginHost::default_plugin_dir();
    if (!d.empty()) dirs.push_back(d.string());
  }
  dirs.insert(dirs.end(), source.plugin_dirs.begin(), source.plugin_dirs.end());
  for (const auto& d : dirs) host_.load_directory(d);
  std::vector<RegisteredWorkload> all = host_.workloads();
  if (!source.model.empty() && is_pt2_path(source.model)) {
    builtin_ = make_pt2_workloads(pt2_options(source.model, source.inputs, source.eager, source.model_for));
  } else if (!source.model.empty()) {
    const TorchScriptOptions ts = torchscript_options(source.model, source.inputs, source.model_for);
    if (source.validate_model) validate_torchscript(ts);
    builtin_ = make_torchscript_workloads(ts, source.train);
  }
  for (const auto& w : builtin_) all.push_back({w.get(), &PluginHost::builtin_info()});
  registry_ = std::make_unique<Registry>(all);
}

}  // namespace mpscheck
