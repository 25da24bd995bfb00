#include "core/case_catalog.hpp"

#include "core/opinfo_cases.hpp"
#include "core/pt2_workload.hpp"
#include "core/reference_cache.hpp"
#include "core/torchscript_workload.hpp"

#include <system_error>

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
  // OpInfo's recorded samples (core/opinfo_cases.hpp), from each plugin folder that holds an export.
  for (const auto& d : dirs) {
    const std::filesystem::path file = std::filesystem::path(d) / kOpInfoFileName;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) continue;
    check_plugin_trust(file);
    auto calls = std::make_unique<OpInfoCalls>(read_opinfo_calls(file));
    // Its digest is its version: a reference cached from another export is not reused.
    opinfo_info_.push_back(std::make_unique<PluginInfo>(
        PluginInfo{file.string(), "opinfo", "torch " + calls->torch_version + ", " + file_digest(file.string())}));
    for (auto& w : make_opinfo_workloads(*calls)) {
      all.push_back({w.get(), opinfo_info_.back().get()});
      opinfo_workloads_.push_back(std::move(w));
    }
    opinfo_.push_back(std::move(calls));
  }
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
