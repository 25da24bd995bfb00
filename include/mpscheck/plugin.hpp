// The plugin boundary. A plugin is a shared module exporting one symbol, `mpscheck_plugin`
// (a BOOST_DLL_ALIAS to a function returning the descriptor below). The host reads the first
// fields — magic and API version — before it touches anything else, so a plugin built for another
// API or LibTorch is refused with a sentence, not a crash.
//
// Writing a plugin:
//
//   #include <mpscheck/plugin.hpp>
//   MPSCHECK_CATALOG(my_cases) {            // any number of these, in any of the plugin's files
//     catalog.add(std::make_unique<MyWorkload>(...));
//   }
//   MPSCHECK_PLUGIN("my-plugin", "1.0.0")   // exactly once per plugin
#pragma once

#include <mpscheck/workload.hpp>

#include <boost/dll/alias.hpp>
#include <torch/version.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace mpscheck {

// Bump when Workload, Instance, Placement, Setup, Output or PluginDescriptor change layout.
inline constexpr std::uint32_t kPluginApiVersion = 6;      // 2: Placement::round_inputs_to, Instance::trace_layers;
                                                           // 3: Output's index and standard-error metadata;
                                                           // 4: Instance::layer_call;
                                                           // 5: Workload::input_shapes, with_input_shapes;
                                                           // 6: InputShape::layout, Workload::with_inputs
inline constexpr std::uint32_t kPluginMagic = 0x4d505343;  // "MPSC"

// Everything a plugin creates, handed to the host in one piece.
class Catalog {
 public:
  void add(std::unique_ptr<Workload> workload) { workloads_.push_back(std::move(workload)); }
  std::vector<std::unique_ptr<Workload>>& workloads() { return workloads_; }

 private:
  std::vector<std::unique_ptr<Workload>> workloads_;
};

extern "C" {
// Field order is frozen for the first four fields; later fields may change with api_version.
struct PluginDescriptor {
  std::uint32_t magic;        // kPluginMagic
  std::uint32_t api_version;  // kPluginApiVersion the plugin was built with
  std::uint32_t torch_major;  // LibTorch the plugin was built against
  std::uint32_t torch_minor;
  const char* name;
  const char* version;
  void (*create)(Catalog& catalog);  // fills `catalog`; may throw
  void* reserved[4];
};
}

using CatalogFn = void (*)(Catalog&);

// Per-plugin list of catalog functions. Hidden so that every plugin module keeps its own.
__attribute__((visibility("hidden"))) inline std::vector<CatalogFn>& plugin_catalog_functions() {
  static std::vector<CatalogFn> functions;
  return functions;
}

struct CatalogRegistration {
  explicit CatalogRegistration(CatalogFn fn) { plugin_catalog_functions().push_back(fn); }
};

inline void create_plugin_catalog(Catalog& catalog) {
  for (CatalogFn fn : plugin_catalog_functions()) fn(catalog);
}

}  // namespace mpscheck

#define MPSCHECK_CONCAT_INNER(a, b) a##b
#define MPSCHECK_CONCAT(a, b) MPSCHECK_CONCAT_INNER(a, b)

// Declares a function `void fn(mpscheck::Catalog& catalog)` that adds workloads to the plugin.
#define MPSCHECK_CATALOG(fn)                                                                           \
  static void fn(::mpscheck::Catalog& catalog);                                                        \
  static const ::mpscheck::CatalogRegistration MPSCHECK_CONCAT(mpscheck_registration_, __LINE__){&fn}; \
  static void fn([[maybe_unused]] ::mpscheck::Catalog& catalog)

// Exports the plugin descriptor. Use once per plugin module.
#define MPSCHECK_PLUGIN(NAME, VERSION)                                                          \
  namespace mpscheck_plugin_export {                                                            \
  const ::mpscheck::PluginDescriptor* mpscheck_plugin_descriptor() {                            \
    static const ::mpscheck::PluginDescriptor descriptor = {::mpscheck::kPluginMagic,           \
                                                            ::mpscheck::kPluginApiVersion,      \
                                                            TORCH_VERSION_MAJOR,                \
                                                            TORCH_VERSION_MINOR,                \
                                                            NAME,                               \
                                                            VERSION,                            \
                                                            &::mpscheck::create_plugin_catalog, \
                                                            {}};                                \
    return &descriptor;                                                                         \
  }                                                                                             \
  BOOST_DLL_ALIAS(mpscheck_plugin_export::mpscheck_plugin_descriptor, mpscheck_plugin)          \
  }
