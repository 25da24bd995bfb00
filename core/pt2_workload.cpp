#include "core/pt2_workload.hpp"

#include "checks/errors.hpp"
#include "core/reference_cache.hpp"
#include "util/atomic_file.hpp"

#include <mpscheck/dtype_names.hpp>

#include <c10/core/InferenceMode.h>
#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/export/pt2_archive_constants.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/version.h>

#include <sys/utsname.h>

#include <filesystem>
#include <set>
#include <sstream>

namespace mpscheck {

namespace {

namespace spec = torch::_export::archive_spec;

// The metadata key in which scripts/mpscheck-export.py records the --input specs, and the torch
// that compiled the model.
constexpr const char* kInputsKey = "mpscheck.inputs";
constexpr const char* kTorchKey = "mpscheck.torch_version";

std::string device_name(const c10::Device& d) { return c10::DeviceTypeName(d.type(), /*lower_case=*/true); }

std::string hint() {
  return "compile it with scripts/mpscheck-export.py (or torch._inductor.aoti_compile_and_package) on this machine";
}

// What the package holds: its models by name, each with the metadata AOTInductor recorded.
struct PackageContents {
  std::map<std::string, std::unordered_map<std::string, std::string>> models;
  std::string names() const {
    std::vector<std::string> n;
    for (const auto& [name, _] : models) n.push_back(name);
    return n.empty() ? "none" : fmt::format("{}", fmt::join(n, ", "));
  }
};

std::string record_text(caffe2::serialize::PyTorchStreamReader& reader, const std::string& name) {
  if (!reader.hasRecord(name)) return {};
  auto [data, size] = reader.getRecord(name);
  return std::string(static_cast<const char*>(data.get()), size);
}

std::string what_of(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return tidy_exception_message(c->what_without_backtrace());
  return tidy_exception_message(e.what());
}

// Reads the archive's records and each model's metadata; throws BadModelInput with one line for a
// file that is missing, is not a zip archive, is not a .pt2 package, or was written in another
// version of the archive format than this LibTorch reads.
PackageContents read_package(const std::string& path) {
  if (const std::string why = not_a_file_reason(path); !why.empty())
    throw BadModelInput(fmt::format("--model {}: {}", path, why));
  PackageContents p;
  std::vector<std::string> records;
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    records = reader.getAllRecords();
    const std::string format = record_text(reader, std::string(spec::ARCHIVE_FORMAT_PATH));
    if (format != spec::ARCHIVE_FORMAT_VALUE)
      throw BadModelInput(fmt::format("--model {} is not a .pt2 package (no archive_format 'pt2' record{}); {}", path,
                                      reader.hasRecord("constants.pkl") ? ": it is TorchScript, name it FILE.pt" : "",
                                      hint()));
    const std::string version = record_text(reader, std::string(spec::ARCHIVE_VERSION_PATH));
    if (!version.empty() && version != spec::ARCHIVE_VERSION_VALUE)
      throw BadModelInput(
          fmt::format("--model {} is a .pt2 archive of version {}; this mpscheck's LibTorch {} reads "
                      "version {}: compile it again with torch {}",
                      path, version.substr(0, 20), TORCH_VERSION, spec::ARCHIVE_VERSION_VALUE, TORCH_VERSION));
  } catch (const BadModelInput&) {
    throw;
  } catch (const std::exception& e) {
    throw BadModelInput(fmt::format("--model {} is not a readable .pt2 package ({}); {}", path, what_of(e), hint()));
  }
  const std::string dir(spec::AOTINDUCTOR_DIR);
  std::set<std::string> names;
  for (const auto& r : records)
    if (r.rfind(dir, 0) == 0 && r.find('/', dir.size()) != std::string::npos)
      names.insert(r.substr(dir.size(), r.find('/', dir.size()) - dir.size()));
  for (const auto& name : names) {
    try {
      p.models[name] = torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(path, name);
    } catch (const std::exception& e) {
      throw BadModelInput(fmt::format("--model {}: the metadata of its model {} cannot be read ({}); {}", path, name,
                                      what_of(e), hint()));
    }
  }
  if (p.models.empty())
    throw BadModelInput(fmt::format("--model {} holds no AOTInductor model (no {} folder); {}", path, dir, hint()));
  return p;
}

// The model a side computing on `device` in `dtype` runs: DEVICE_DTYPE, or a package's only model
// `model` (aoti_compile_and_package's default name), taken as float32 on the device it was
// compiled for. Empty when there is none.
std::string model_name_for(const PackageContents& p, const std::string& device, c10::ScalarType dtype) {
  const std::string name = device + "_" + dtype_name(dtype);
  if (p.models.count(name)) return name;
  const auto it = p.models.find("model");
  if (dtype == c10::kFloat && p.models.size() == 1 && it != p.models.end()) {
    const auto key = it->second.find("AOTI_DEVICE_KEY");
    if (key != it->second.end() && key->second == device) return "model";
  }
  return {};
}

// The names of a flat output list, from the model's output tree (torch.utils._pytree's spec):
// `out` for one tensor, `out.0`, `out.logits` for tuples, lists and dicts, as the TorchScript
// format names them, so an eager reference and the package name each output alike.
void spec_names(const nlohmann::json& node, const std::string& prefix, std::vector<std::string>& out) {
  const auto& type = node.at("type");
  const auto& children = node.at("children_spec");
  if (type.is_null()) {
    out.push_back(prefix);
    return;
  }
  std::vector<std::string> keys;
  const auto& context = node.value("context", nlohmann::json());
  if (type.get<std::string>().find("dict") != std::string::npos && context.is_string()) {
    const auto parsed = nlohmann::json::parse(context.get<std::string>(), nullptr, false);
    if (parsed.is_array() && parsed.size() == children.size())
      for (const auto& k : parsed) keys.push_back(k.is_string() ? k.get<std::string>() : k.dump());
  }
  for (size_t i = 0; i < children.size(); ++i)
    spec_names(children[i], prefix + "." + (keys.empty() ? std::to_string(i) : keys[i]), out);
}

std::vector<std::string> output_names(torch::inductor::AOTIModelPackageLoader& loader) {
  std::vector<std::string> names;
  try {
    const auto call_spec = loader.get_call_spec();
    if (call_spec.size() == 2) {
      const auto j = nlohmann::json::parse(call_spec[1]);
      spec_names(j.at(1), "out", names);
    }
  } catch (const std::exception&) {
    names.clear();  // a spec this version cannot read: the outputs are named by position
  }
  return names;
}

// The number of positional inputs the model was compiled for, from its input tree ((args,
// kwargs)); -1 when unknown.
int input_count(torch::inductor::AOTIModelPackageLoader& loader) {
  try {
    const auto call_spec = loader.get_call_spec();
    if (call_spec.empty()) return -1;
    const auto j = nlohmann::json::parse(call_spec[0]).at(1);
    std::vector<std::string> args;
    spec_names(j.at("children_spec").at(0), "", args);
    std::vector<std::string> kwargs;
    spec_names(j.at("children_spec").at(1), "", kwargs);
    return kwargs.empty() ? static_cast<int>(args.size()) : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

class Pt2Instance final : public Instance {
 public:
  Pt2Instance(const Pt2Options& o, const std::string& model, const Setup& setup, const Placement& where)
      : loader_(o.path, model, false, 1, where.device.has_index() ? where.device.index() : -1),
        inputs_(model_inputs(o.inputs, setup, where)) {
    names_ = output_names(loader_);
    if (where.round_inputs_to != c10::ScalarType::Undefined) {
      // The rounded-input baseline: the float32 model with its weights rounded to the dtype.
      auto* runner = loader_.get_runner();
      auto constants = runner->extract_constants_map(false);
      std::unordered_map<std::string, at::Tensor> rounded;
      for (auto& [name, t] : constants)
        if (t.is_floating_point()) rounded[name] = t.to(where.round_inputs_to).to(t.scalar_type()).contiguous();
      if (!rounded.empty()) runner->update_constant_buffer(rounded, false, false);
    }
  }

  Outputs run() override {
    c10::InferenceMode inference;
    std::vector<at::Tensor> flat = loader_.run(inputs_);
    Outputs out;
    const bool named = names_.size() == flat.size();
    for (size_t i = 0; i < flat.size(); ++i)
      out.push_back({named ? names_[i] : (flat.size() == 1 ? "out" : "out." + std::to_string(i)), flat[i]});
    return out;
  }

  void iterate() override {
    c10::InferenceMode inference;
    loader_.run(inputs_);
  }

 private:
  torch::inductor::AOTIModelPackageLoader loader_;
  std::vector<at::Tensor> inputs_;
  std::vector<std::string> names_;
};

class Pt2Workload final : public UserModelWorkload {
 public:
  Pt2Workload(Pt2Options o, PackageContents contents) : o_(std::move(o)), contents_(std::move(contents)) {
    if (o_.eager) eager_ = std::move(make_torchscript_workloads(*o_.eager, false).front());
  }
  std::string id() const override { return "model/pt2/" + std::filesystem::path(o_.path).stem().string() + "/infer"; }
  Kind kind() const override { return Kind::Model; }
  std::vector<std::string> tags() const override {
    std::vector<std::string> t{"pt2", "infer"};
    if (eager_) t.push_back("eager-reference");
    return t;
  }
  std::string family() const override { return "model"; }
  std::unique_ptr<Instance> instantiate(const Setup& setup, const Placement& where) const override {
    const bool cpu = where.device.is_cpu();
    const bool rounded = where.round_inputs_to != c10::ScalarType::Undefined;
    // The eager model computes the float32 reference, the float64 gold and the rounded-input
    // baseline: a codegen error the compiled models share cannot then vouch for itself.
    if (eager_ && cpu && where.side != Side::Target && (where.dtype == c10::kFloat || where.dtype == c10::kDouble))
      return eager_->instantiate(setup, where);
    const std::string name = model_name_for(contents_, device_name(where.device), rounded ? c10::kFloat : where.dtype);
    if (name.empty()) {
      if (where.side == Side::Gold)
        throw std::runtime_error(fmt::format(
            "the package holds no cpu_float64 model and no --eager TorchScript model was given, so the verdict rests "
            "on the plain tolerance against the float32 reference; export with scripts/mpscheck-export.py (it writes "
            "both)"));
      throw std::runtime_error(fmt::format("the package {} holds no model for {} in {} (it holds {})", o_.path,
                                           device_name(where.device), dtype_name(where.dtype), contents_.names()));
    }
    return std::make_unique<Pt2Instance>(o_, name, setup, where);
  }
  std::string identity() const override {
    std::string specs;
    for (const auto& i : o_.inputs) specs += (specs.empty() ? "" : " ") + i.text;
    std::string eager;
    if (eager_) eager = " eager " + torchscript_identity(*eager_);
    return fmt::format("pt2 {} inputs {}{}", file_digest(o_.path), specs, eager);
  }

 private:
  Pt2Options o_;
  PackageContents contents_;
  std::unique_ptr<Workload> eager_;
};

std::string this_platform() {
#ifdef __APPLE__
  return "darwin";
#else
  return "linux";
#endif
}

std::string this_machine() {
  utsname u{};
  return uname(&u) == 0 ? u.machine : "";
}

// The CPU instruction sets AOTInductor compiled a CPU model for that this CPU lacks.
std::vector<std::string> missing_isa(const std::string& isa) {
  std::vector<std::string> missing;
#if defined(__x86_64__) || defined(__i386__)
  std::istringstream words(isa);
  for (std::string w; words >> w;) {
    bool has = true;
    if (w == "AVX512") has = __builtin_cpu_supports("avx512f");
    if (w == "AVX512_VNNI") has = __builtin_cpu_supports("avx512vnni");
    if (w == "AVX2") has = __builtin_cpu_supports("avx2");
    if (!has) missing.push_back(w);
  }
#else
  (void)isa;
#endif
  return missing;
}

std::string major_minor(const std::string& version) {
  const auto first = version.find('.');
  if (first == std::string::npos) return version;
  const auto second = version.find_first_not_of("0123456789", first + 1);
  return version.substr(0, second);
}

// One model the run loads: compiled for this platform, CPU and LibTorch, and loads here.
void check_model(const Pt2Options& o, const PackageContents& p, const std::string& name, const std::string& role) {
  const auto& meta = p.models.at(name);
  const auto get = [&](const char* key) {
    const auto it = meta.find(key);
    return it == meta.end() ? std::string() : it->second;
  };
  const std::string torch = get(kTorchKey);
  if (!torch.empty() && major_minor(torch) != major_minor(TORCH_VERSION))
    throw BadModelInput(
        fmt::format("--model {}: its model {} was compiled by torch {}, and this mpscheck runs LibTorch "
                    "{}; mpscheck runs AOTInductor code only on the torch release that compiled it: compile it again "
                    "with torch {}",
                    o.path, name, torch.substr(0, 40), TORCH_VERSION, TORCH_VERSION));
  const std::string platform = get("AOTI_PLATFORM"), machine = get("AOTI_MACHINE");
  if ((!platform.empty() && platform != this_platform()) || (!machine.empty() && machine != this_machine()))
    throw BadModelInput(
        fmt::format("--model {}: its model {} ({}) was compiled for {} {}, and this machine is {} {}; {}", o.path, name,
                    role, platform, machine, this_platform(), this_machine(), hint()));
  if (get("AOTI_DEVICE_KEY") == "cpu")
    if (const auto missing = missing_isa(get("AOTI_CPU_ISA")); !missing.empty())
      throw BadModelInput(
          fmt::format("--model {}: its model {} ({}) was compiled for a CPU with {}, which this CPU "
                      "lacks; {}",
                      o.path, name, role, fmt::join(missing, ", "), hint()));
  int count = -1;
  try {
    torch::inductor::AOTIModelPackageLoader loader(o.path, name);
    count = input_count(loader);
  } catch (const std::exception& e) {
    throw BadModelInput(fmt::format(
        "--model {}: its model {} ({}) does not load here ({}){}; {}", o.path, name, role, what_of(e),
        torch.empty() ? ": it may have been compiled by another torch than LibTorch " + std::string(TORCH_VERSION) : "",
        hint()));
  }
  if (count >= 0 && static_cast<size_t>(count) != o.inputs.size())
    throw BadModelInput(
        fmt::format("--model {}: its model {} takes {} input{}, and --input gives {}; give one --input "
                    "per argument, in order",
                    o.path, name, count, count == 1 ? "" : "s", o.inputs.size()));
  const std::string recorded = get(kInputsKey);
  if (recorded.empty()) return;
  std::vector<std::string> given, traced;
  for (const auto& i : o.inputs) given.push_back(parse_input_spec(i.text).text);
  std::istringstream words(recorded);
  for (std::string w; words >> w;) traced.push_back(w);
  const auto same = [](const InputSpec& a, const InputSpec& b) { return a.dtype == b.dtype && a.shape == b.shape; };
  bool match = traced.size() == o.inputs.size();
  for (size_t i = 0; match && i < traced.size(); ++i) {
    try {
      match = same(o.inputs[i], parse_input_spec(traced[i]));
    } catch (const BadModelInput&) {
      return;  // a record this version cannot read checks nothing
    }
  }
  if (!match)
    throw BadModelInput(
        fmt::format("--model {}: --input {} does not match the inputs its model {} was compiled for "
                    "({}); a package runs only at the dtypes and shapes it was compiled for",
                    o.path, fmt::join(given, " "), name, recorded));
}

}  // namespace

bool is_pt2_path(const std::string& path) { return path.size() > 4 && path.compare(path.size() - 4, 4, ".pt2") == 0; }

Pt2Options pt2_options(const std::string& path, const std::vector<std::string>& specs, const std::string& eager,
                       const std::vector<std::string>& model_for) {
  Pt2Options o;
  o.path = path;
  for (const auto& s : specs) o.inputs.push_back(parse_input_spec(s));
  if (o.inputs.empty()) {
    const PackageContents p = read_package(path);
    for (const auto& [name, meta] : p.models) {
      const auto it = meta.find(kInputsKey);
      if (it == meta.end()) continue;
      std::istringstream words(it->second);
      for (std::string w; words >> w;) o.inputs.push_back(parse_input_spec(w));
      break;
    }
    if (o.inputs.empty())
      throw BadModelInput(
          fmt::format("--model {}: the package records no inputs; give them with --input, e.g. "
                      "--input float32[1,3,224,224]",
                      path));
  }
  if (!eager.empty()) {
    o.eager = torchscript_options(eager, {}, model_for);
    o.eager->inputs = o.inputs;
  } else if (!model_for.empty()) {
    throw BadModelInput("--model-for goes with a TorchScript model: with a .pt2 --model, with its --eager FILE.pt");
  }
  return o;
}

std::vector<std::unique_ptr<Workload>> make_pt2_workloads(const Pt2Options& options) {
  std::vector<std::unique_ptr<Workload>> out;
  out.push_back(std::make_unique<Pt2Workload>(options, read_package(options.path)));
  return out;
}

void check_pt2(const Pt2Options& o, const c10::Device& device, c10::ScalarType dtype) {
  const PackageContents p = read_package(o.path);
  const std::string dev = device_name(device);
  const auto need = [&](const std::string& d, c10::ScalarType t, const std::string& role) {
    const std::string name = model_name_for(p, d, t);
    if (name.empty())
      throw BadModelInput(
          fmt::format("--model {} holds no model compiled for {} in {}, which {} needs (it holds {}); "
                      "compile one named {}_{} with scripts/mpscheck-export.py on a machine with {}",
                      o.path, d, dtype_name(t), role, p.names(), d, dtype_name(t), d));
    check_model(o, p, name, role);
  };
  if (device.is_cpu() && dtype == c10::kFloat && !o.eager)
    throw BadModelInput(
        fmt::format("--model {} on --target cpu would compare the package's cpu_float32 model with "
                    "itself; give the model's TorchScript as --eager FILE.pt (scripts/mpscheck-export.py "
                    "writes it) to check the compiled code against eager, or a reduced-precision "
                    "target such as cpu:bfloat16",
                    o.path));
  need(dev, dtype, "the target");
  if (!o.eager) {
    need("cpu", c10::kFloat, "the CPU float32 reference");
    if (const std::string gold = model_name_for(p, "cpu", c10::kDouble); !gold.empty())
      check_model(o, p, gold, "the float64 gold");
  } else {
    validate_torchscript(*o.eager);
  }
}

}  // namespace mpscheck
