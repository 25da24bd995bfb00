// --reference-cache DIR: the CPU side of a case, kept between runs. The float32 reference
// outputs, what the determinism re-run found, the float64 gold once a run needed it, and the
// reference's timing are the same against any target, so a second run against another target
// (or the same one after a fix) computes only the target side.
//
// An entry is used only when its whole key matches: the LibTorch version and build, the CPU and
// its threads, the seed and --quick, the plugin's name, version and file digest (or the model
// file's digest, inputs and mode), the case id and the timing
// budget. The file carries the key and a checksum of its contents; a file that is torn, corrupt or
// keyed otherwise is recomputed and replaced, never trusted.
#pragma once

#include <mpscheck/workload.hpp>

#include "checks/case_host.hpp"
#include "checks/result.hpp"

#include <map>
#include <optional>
#include <string>

namespace mpscheck {

struct CacheKey {
  std::string torch;       // TORCH_VERSION and a digest of at::show_config()
  std::string cpu;         // model name
  int threads = 0;         // intra-op threads the reference's outputs were computed with
  int timing_threads = 0;  // and its times measured with
  std::uint64_t seed = 0;
  bool quick = false;
  std::string plugin, plugin_version;
  // What the case is computed from beyond its id: the plugin file's content digest, or for
  // --model the TorchScript file's digest, its input specs and the mode. A rebuilt plugin that
  // kept its version, or a .pt file replaced under the same name, never finds the old entry.
  std::string source;
  std::string case_id;
  // The text that is compared in full on every load, and the digest that names the file.
  std::string text() const;
};

// A digest of the file's bytes ("fnv1a64:<hex>:<size>"); remembered per path, size and
// modification time, so a plugin's digest is read once per run, not once per case. Throws
// std::runtime_error when the file cannot be read.
std::string file_digest(const std::string& path);

// This process's LibTorch build and CPU, for CacheKey::torch and CacheKey::cpu.
std::string current_torch_identity();

struct CachedReference {
  Outputs outputs;                         // the CPU float32 reference (value, standard_error)
  bool determinism_checked = false;        // the reference was run twice
  ReferenceRerun rerun;                    // the second run's value of each output that differed
  std::map<std::string, at::Tensor> gold;  // CPU float64, once a run needed it
  std::optional<TimingStats> reference_time;
  double reference_time_budget = 0;  // --min-time the reference time was measured with
};

class ReferenceCache {
 public:
  explicit ReferenceCache(std::string dir) : dir_(std::move(dir)) {}

  // Nothing when there is no entry, or one that is damaged or keyed differently; `why` (if given)
  // says which, for the worker log.
  std::optional<CachedReference> load(const CacheKey& key, std::string* why = nullptr) const;
  // Written whole to a temporary file, then renamed: a reader sees the old entry or the new one.
  // Returns false (and the run goes on without caching) when the folder cannot be written.
  bool store(const CacheKey& key, const CachedReference& entry) const;

  std::string path_for(const CacheKey& key) const;

 private:
  std::string dir_;
};

}  // namespace mpscheck
