#include "core/plugin_host.hpp"

#include "core/elf_deps.hpp"

#include <mpscheck/plugin.hpp>
#include <mpscheck/tolerance_families.hpp>

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <fmt/format.h>

#include <dlfcn.h>
#if defined(__linux__)
#include <link.h>
#endif
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace mpscheck {

namespace fs = std::filesystem;

namespace {
// LibTorch plugins register operators in static objects and crash if unloaded, so every library
// is kept until the process exits (as LLVM keeps pass plugins). Deliberately never destroyed.
std::vector<boost::dll::shared_library>& permanent_libraries() {
  static auto* libraries = new std::vector<boost::dll::shared_library>();
  return *libraries;
}

}  // namespace

void* find_plugin_function(const char* name) {
  for (auto& lib : permanent_libraries())
    if (void* f = ::dlsym(lib.native(), name)) return f;
  return nullptr;
}

namespace {

bool looks_like_plugin_file(const fs::path& p) {
  const auto ext = p.extension().string();
  return ext == ".so" || ext == ".dylib";
}

// libc10.so, libtorch_cpu.so.1.13, libc10_cuda.so ...: the libraries of which one process can
// hold only one copy (each registers operators and types in process-wide tables).
bool is_libtorch_library(const std::string& name) {
  const std::string base = fs::path(name).filename().string();
  for (const char* stem : {"libc10.", "libc10_", "libtorch.", "libtorch_"})
    if (base.rfind(stem, 0) == 0) return base.find(".so") != std::string::npos;
  return false;
}

// The LibTorch libraries this process has loaded, by path.
std::vector<fs::path> loaded_libtorch_libraries() {
  std::vector<fs::path> out;
#if defined(__linux__)
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name && *info->dlpi_name && is_libtorch_library(info->dlpi_name))
          static_cast<std::vector<fs::path>*>(data)->emplace_back(info->dlpi_name);
        return 0;
      },
      &out);
#endif
  return out;
}

fs::path canonical_or_same(const fs::path& p) {
  std::error_code ec;
  const fs::path c = fs::canonical(p, ec);
  return ec ? p : c;
}

// A plugin that links another LibTorch than the host's (Debian's 1.13 beside the wheel's 2.13)
// loads a second copy whose static initialisers collide with the first: SIGBUS inside dlopen,
// before any version check could speak. So its ELF dependencies are read first: a LibTorch
// library it names is fine only when the loader will reuse the host's copy, i.e. the name is the
// one the host's copy was loaded under (a bare soname) or a path to that same file.
void check_one_libtorch(const fs::path& file) {
  const auto deps = read_elf_dependencies(file);
  if (!deps) return;  // not ELF: dlopen gives its own reason
  const std::vector<fs::path> host = loaded_libtorch_libraries();
  if (host.empty()) return;
  for (const std::string& needed : deps->needed) {
    if (!is_libtorch_library(needed)) continue;
    const std::string base = fs::path(needed).filename().string();
    const bool has_path = needed.find('/') != std::string::npos;
    const fs::path* same_name = nullptr;
    for (const fs::path& h : host)
      if (h.filename() == base) same_name = &h;
    if (same_name && (!has_path || canonical_or_same(needed) == canonical_or_same(*same_name))) continue;
    // Name the host's library of the same kind (libc10 for libc10.so.1.13), else its first.
    const std::string kind = base.substr(0, base.find(".so"));
    fs::path ours = host.front();
    for (const fs::path& h : host)
      if (h.filename().string().substr(0, h.filename().string().find(".so")) == kind) ours = h;
    std::string theirs = resolve_dependency(needed, *deps);
    if (theirs.empty()) theirs = "not found on the loader's paths";
    throw PluginLoadError(
        fmt::format("{}: links {} ({}), another LibTorch than this mpscheck's ({}); one process "
                    "holds one LibTorch, so it was not loaded: rebuild the plugin against {}",
                    file.string(), needed, theirs, ours.string(), ours.parent_path().string()));
  }
}
}  // namespace

void check_plugin_trust(const fs::path& path) {
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) return;  // a missing path gets its own message from the caller
  const char* what = S_ISDIR(sb.st_mode) ? "plugin folder" : "plugin";
  // Code from there runs inside mpscheck: only its owner (or root) may have been able to write it.
  if (sb.st_mode & S_IWOTH)
    throw UntrustedPlugin(
        fmt::format("refusing {} {}: it is world-writable, so anyone on this machine could have "
                    "replaced it; if you trust it, run 'chmod o-w {}'",
                    what, path.string(), path.string()));
  const uid_t me = ::geteuid();
  if (sb.st_uid != me && sb.st_uid != 0) {
    const passwd* owner = ::getpwuid(sb.st_uid);
    const std::string who =
        owner ? fmt::format("{} (uid {})", owner->pw_name, sb.st_uid) : fmt::format("uid {}", sb.st_uid);
    throw UntrustedPlugin(
        fmt::format("refusing {} {}: it belongs to {}, not to you or root; if you trust it, run "
                    "'chown {} {}' (or copy it into a folder of your own)",
                    what, path.string(), who, me, path.string()));
  }
}

PluginHost::PluginHost() = default;
PluginHost::~PluginHost() = default;

void PluginHost::load_file(const fs::path& file) {
  const std::string where = file.string();
  if (!fs::exists(file)) throw PluginLoadError(fmt::format("{}: no such file", where));
  check_plugin_trust(file);
  check_one_libtorch(file);
  boost::dll::fs::error_code ec;
  boost::dll::shared_library lib(file, ec, boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local);
  if (ec || !lib.is_loaded()) {
    const char* detail = dlerror();  // the loader's own reason is more useful than the errno
    throw PluginLoadError(fmt::format("{}: not a loadable shared library ({})", where, detail ? detail : ec.message()));
  }
  if (!lib.has("mpscheck_plugin"))
    throw PluginLoadError(
        fmt::format("{}: not an mpscheck plugin (it exports no 'mpscheck_plugin' "
                    "descriptor; build it with MPSCHECK_PLUGIN)",
                    where));
  auto descriptor_fn = lib.get_alias<const PluginDescriptor*()>("mpscheck_plugin");
  const PluginDescriptor* d = descriptor_fn();
  if (d == nullptr || d->magic != kPluginMagic)
    throw PluginLoadError(fmt::format("{}: its 'mpscheck_plugin' symbol is not an mpscheck descriptor", where));
  if (d->api_version != kPluginApiVersion)
    throw PluginLoadError(
        fmt::format("{}: built for plugin API version {}, this mpscheck speaks version {}; "
                    "rebuild the plugin against this mpscheck's SDK",
                    where, d->api_version, kPluginApiVersion));
  if (d->torch_major != TORCH_VERSION_MAJOR || d->torch_minor != TORCH_VERSION_MINOR)
    throw PluginLoadError(
        fmt::format("{}: built against LibTorch {}.{}, this mpscheck uses LibTorch {}.{}; "
                    "rebuild the plugin against the same LibTorch",
                    where, d->torch_major, d->torch_minor, TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR));
  auto info = std::make_unique<PluginInfo>(PluginInfo{where, d->name ? d->name : "?", d->version ? d->version : "?"});
  Catalog catalog;
  try {
    d->create(catalog);
  } catch (const std::exception& e) {
    permanent_libraries().push_back(std::move(lib));  // the exception's code lives in the library
    throw PluginLoadError(
        fmt::format("{}: plugin '{}' failed while creating its cases: {}", where, info->name, e.what()));
  } catch (...) {
    permanent_libraries().push_back(std::move(lib));
    throw PluginLoadError(
        fmt::format("{}: plugin '{}' failed while creating its cases (unknown exception)", where, info->name));
  }
  permanent_libraries().push_back(std::move(lib));
  // A misspelt tolerance family would be compared under a default tolerance: refuse it here.
  for (const auto& w : catalog.workloads()) {
    const std::string family = w->family();
    if (!is_tolerance_family(family))
      throw PluginLoadError(
          fmt::format("{}: plugin '{}' case {} names tolerance family '{}', which mpscheck does not "
                      "have; use one of: {}",
                      where, info->name, w->id(), family, tolerance_family_list()));
  }
  for (auto& w : catalog.workloads()) workloads_.emplace_back(info.get(), std::move(w));
  plugins_.push_back(std::move(info));
}

void PluginHost::load_directory(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw PluginLoadError(fmt::format("plugin folder {} does not exist or is not a folder", dir.string()));
  check_plugin_trust(dir);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file() && looks_like_plugin_file(entry.path())) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    try {
      load_file(f);
    } catch (const UntrustedPlugin&) {
      throw;
    } catch (const PluginLoadError& e) {
      warnings_.push_back(e.what());
    }
  }
}

std::vector<RegisteredWorkload> PluginHost::workloads() const {
  std::vector<RegisteredWorkload> out;
  out.reserve(workloads_.size());
  for (const auto& [plugin, w] : workloads_) out.push_back({w.get(), plugin});
  return out;
}

const PluginInfo& PluginHost::builtin_info() {
  static const PluginInfo info{"<built in>", "torchscript", "built in"};
  return info;
}

fs::path PluginHost::default_plugin_dir() {
  boost::dll::fs::error_code ec;
  const fs::path exe_dir = boost::dll::program_location(ec).parent_path();
  if (ec) return {};
  for (const fs::path& candidate : {exe_dir / "plugins", exe_dir.parent_path() / "lib" / "mpscheck" / "plugins"}) {
    std::error_code fec;
    if (fs::is_directory(candidate, fec)) return candidate;
  }
  return {};
}

}  // namespace mpscheck
