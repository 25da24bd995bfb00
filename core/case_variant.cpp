#include "core/case_variant.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace mpscheck {

namespace {

// The varied case under its own id; everything else is the plugin's workload at the new sizes (owned),
// or the declared one itself (a probe of the declared case). A probe's reproducer says first, as a
// comment, the state the probe ran it in.
class VariedWorkload final : public Workload {
 public:
  VariedWorkload(std::string id, std::unique_ptr<Workload> owned, const Workload* declared, StateProbe probe)
      : id_(std::move(id)), owned_(std::move(owned)), inner_(owned_ ? owned_.get() : declared), probe_(probe) {}

  std::string id() const override { return id_; }
  Kind kind() const override { return inner_->kind(); }
  std::vector<std::string> tags() const override { return inner_->tags(); }
  std::string family() const override { return inner_->family(); }
  c10::ScalarType dtype() const override { return inner_->dtype(); }
  bool has_gold() const override { return inner_->has_gold(); }
  bool is_random() const override { return inner_->is_random(); }
  std::unique_ptr<Instance> instantiate(const Setup& setup, const Placement& where) const override {
    return inner_->instantiate(setup, where);
  }
  std::string reproducer(const ReproTarget& target) const override {
    std::string script = inner_->reproducer(target);
    if (script.empty() || probe_.kind == StateProbe::Kind::None) return script;
    return fmt::format("# {}: {}\n", id_, probe_words(probe_)) + script;
  }
  std::vector<InputShape> input_shapes() const override { return inner_->input_shapes(); }
  std::unique_ptr<Workload> with_input_shapes(const std::vector<Shape>& shapes) const override {
    return inner_->with_input_shapes(shapes);
  }
  std::unique_ptr<Workload> with_inputs(const std::vector<InputVariant>& inputs) const override {
    return inner_->with_inputs(inputs);
  }

 private:
  static std::string probe_words(const StateProbe& p) {
    switch (p.kind) {
      case StateProbe::Kind::Dirty:
        return "mpscheck ran it after allocating blocks of up to 72 MiB on the device, filling them with NaN and "
               "1e30 and freeing them";
      case StateProbe::Kind::Threads: return fmt::format("mpscheck ran it from {} threads at once", p.count);
      case StateProbe::Kind::Repeat:
        return fmt::format(
            "mpscheck ran it {} times, alternating with the declared sizes, and measured the "
            "process's memory",
            p.count);
      case StateProbe::Kind::None: break;
    }
    return "";
  }
  std::string id_;
  std::unique_ptr<Workload> owned_;
  const Workload* inner_;
  StateProbe probe_;
};

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 12 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

Shape parse_shape(const std::string& text, const std::string& id) {
  Shape shape;
  if (text.empty()) return shape;
  size_t start = 0;
  for (;;) {
    const size_t x = text.find('x', start);
    const std::string part = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (!all_digits(part))
      throw BadVariantId(fmt::format("case id '{}': '{}' is not a shape (sizes joined by 'x', e.g. 24x40)", id, text));
    shape.push_back(std::stoll(part));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return shape;
}

// "4x8x16x16+cl+off3": the shape, then the layout tokens.
InputVariant parse_input(const std::string& text, const std::string& id) {
  InputVariant in;
  const size_t plus = text.find('+');
  in.shape = parse_shape(text.substr(0, plus), id);
  if (plus == std::string::npos) return in;
  size_t start = plus + 1;
  bool layout_named = false;
  for (;;) {
    const size_t next = text.find('+', start);
    const std::string token = text.substr(start, next == std::string::npos ? std::string::npos : next - start);
    const InputLayout layout = token == "c"     ? InputLayout::Contiguous
                               : token == "t"   ? InputLayout::Transposed
                               : token == "cl"  ? InputLayout::ChannelsLast
                               : token == "cpu" ? InputLayout::CpuScalar
                                                : InputLayout::Declared;
    if (layout != InputLayout::Declared && !layout_named) {
      in.layout = layout;
      layout_named = true;
    } else if (token.rfind("off", 0) == 0 && all_digits(token.substr(3)) && in.storage_offset == 0 &&
               std::stoll(token.substr(3)) > 0 && std::stoll(token.substr(3)) <= (std::int64_t{1} << 30)) {
      in.storage_offset = std::stoll(token.substr(3));
    } else {
      throw BadVariantId(
          fmt::format("case id '{}': '+{}' is not a layout (+c, +t, +cl or +cpu, once) or a storage offset "
                      "(+offN, N from 1 to 2^30, once)",
                      id, token));
    }
    if (next == std::string::npos) break;
    start = next + 1;
  }
  if (in.layout == InputLayout::CpuScalar && !in.shape.empty())
    throw BadVariantId(
        fmt::format("case id '{}': '{}': +cpu makes the input a 0-dim tensor, so it has no shape "
                    "(NAME=+cpu)",
                    id, text));
  return in;
}

// "dirty", "threads2", "repeat20": the probe after '~'.
StateProbe parse_probe(const std::string& token, const std::string& id) {
  const auto counted = [&](const char* word, StateProbe::Kind kind, int lo, int hi) -> std::optional<StateProbe> {
    const std::string w(word);
    if (token.rfind(w, 0) != 0 || !all_digits(token.substr(w.size()))) return std::nullopt;
    const long long n = std::stoll(token.substr(w.size()));
    if (n < lo || n > hi || token[w.size()] == '0') return std::nullopt;
    return StateProbe{kind, static_cast<int>(n)};
  };
  if (token == "dirty") return {StateProbe::Kind::Dirty, 0};
  if (auto p = counted("threads", StateProbe::Kind::Threads, 2, 8)) return *p;
  if (auto p = counted("repeat", StateProbe::Kind::Repeat, 2, 1000)) return *p;
  throw BadVariantId(
      fmt::format("case id '{}': '~{}' is not a state probe (~dirty, ~threadsN with N from 2 to 8, or ~repeatN with "
                  "N from 2 to 1000)",
                  id, token));
}

const char* layout_token(InputLayout l) {
  switch (l) {
    case InputLayout::Declared: return "";
    case InputLayout::Contiguous: return "c";
    case InputLayout::Transposed: return "t";
    case InputLayout::ChannelsLast: return "cl";
    case InputLayout::CpuScalar: return "cpu";
  }
  return "";
}

}  // namespace

std::string layout_text(InputLayout layout, std::int64_t storage_offset) {
  std::string s = layout == InputLayout::Declared ? "" : std::string("+") + layout_token(layout);
  if (storage_offset > 0) s += fmt::format("+off{}", storage_offset);
  return s;
}

std::string layout_words(InputLayout layout, std::int64_t storage_offset, const std::string& declared) {
  const std::string name = layout == InputLayout::Contiguous     ? "contiguous"
                           : layout == InputLayout::Transposed   ? "transposed"
                           : layout == InputLayout::ChannelsLast ? "channels_last"
                           : layout == InputLayout::CpuScalar    ? "as a 0-dim tensor on the CPU"
                           : declared.empty()                    ? "as declared"
                                                                 : declared;
  if (storage_offset <= 0) return name;
  // A sliced input starts past its storage's first element already (x[..., 1::2]): the offset moves
  // it further, so "at storage offset 1" would name the wrong element.
  if (layout == InputLayout::Declared && declared == "sliced")
    return fmt::format("sliced, shifted {} element{} further along its storage", storage_offset,
                       storage_offset == 1 ? "" : "s");
  return fmt::format("{} at storage offset {}", name, storage_offset);
}

std::string probe_text(const StateProbe& probe) {
  switch (probe.kind) {
    case StateProbe::Kind::Dirty: return "dirty";
    case StateProbe::Kind::Threads: return fmt::format("threads{}", probe.count);
    case StateProbe::Kind::Repeat: return fmt::format("repeat{}", probe.count);
    case StateProbe::Kind::None: break;
  }
  return "";
}

std::string with_probe(const std::string& id, const StateProbe& probe) {
  if (probe.kind == StateProbe::Kind::None) return id;
  return id + (id.find(kVariantMark) == std::string::npos ? std::string(1, kVariantMark) : std::string()) + kProbeMark +
         probe_text(probe);
}

StateProbe probe_of(const std::string& id) {
  const std::optional<VariantId> v = parse_variant_id(id);
  return v ? v->probe : StateProbe{};
}

std::string sizes_text(const Shape& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? "x" : "", shape[i]);
  return s;
}

std::optional<VariantId> parse_variant_id(const std::string& id) {
  const size_t at = id.find(kVariantMark);
  if (at == std::string::npos) return std::nullopt;
  VariantId v;
  v.base = id.substr(0, at);
  std::string rest = id.substr(at + 1);
  if (const size_t tilde = rest.find(kProbeMark); tilde != std::string::npos) {
    v.probe = parse_probe(rest.substr(tilde + 1), id);
    rest.erase(tilde);
  }
  if (v.base.empty() || (rest.empty() && v.probe.kind == StateProbe::Kind::None))
    throw BadVariantId(fmt::format(
        "case id '{}': give the declared case, '@', then NAME=SHAPE[+LAYOUT][+offN][,NAME=...][~PROBE] or ~PROBE", id));
  if (rest.empty()) return v;
  size_t start = 0;
  for (;;) {
    const size_t comma = rest.find(',', start);
    const std::string item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw BadVariantId(fmt::format("case id '{}': '{}' is not NAME=SHAPE", id, item));
    v.inputs.push_back({item.substr(0, eq), parse_input(item.substr(eq + 1), id)});
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return v;
}

std::string variant_id(const std::string& base, const std::vector<InputShape>& declared,
                       const std::vector<Shape>& shapes) {
  std::vector<InputVariant> inputs;
  for (const Shape& s : shapes) inputs.push_back({s, InputLayout::Declared, 0});
  return variant_id(base, declared, inputs);
}

std::string variant_id(const std::string& base, const std::vector<InputShape>& declared,
                       const std::vector<InputVariant>& inputs) {
  std::string changed;
  for (size_t i = 0; i < declared.size() && i < inputs.size(); ++i) {
    const InputVariant& in = inputs[i];
    if (in.shape == declared[i].shape && in.layout == InputLayout::Declared && in.storage_offset == 0) continue;
    changed += fmt::format("{}{}={}{}", changed.empty() ? "" : ",", declared[i].name, sizes_text(in.shape),
                           layout_text(in.layout, in.storage_offset));
  }
  return changed.empty() ? base : base + kVariantMark + changed;
}

const RegisteredWorkload* CaseResolver::find(const std::string& id) {
  if (const RegisteredWorkload* w = registry_.find(id)) return w;
  if (auto it = made_.find(id); it != made_.end()) return &it->second.registered;
  const std::optional<VariantId> v = parse_variant_id(id);
  if (!v) return nullptr;
  const RegisteredWorkload* base = registry_.find(v->base);
  if (!base) return nullptr;
  // A probe of the declared case as it is: any case, op or model, may be run in another state.
  std::unique_ptr<Workload> inner = v->inputs.empty() ? nullptr : made_at(*v, *base, id);
  // Under the id it was asked by: a worker's result must carry the id the host sent.
  Made made{std::make_unique<VariedWorkload>(id, std::move(inner), base->workload, v->probe), {}};
  made.registered = {made.workload.get(), base->plugin};
  auto [it, inserted] = made_.emplace(id, std::move(made));
  return &it->second.registered;
}

std::unique_ptr<Workload> CaseResolver::made_at(const VariantId& v, const RegisteredWorkload& base,
                                                const std::string& id) {
  const std::vector<InputShape> declared = base.workload->input_shapes();
  if (declared.empty())
    throw BadVariantId(fmt::format("case '{}' cannot be made at other sizes (it does not declare its inputs)", v.base));
  std::vector<InputVariant> inputs;
  for (const auto& d : declared) inputs.push_back({d.shape, InputLayout::Declared, 0});
  for (const auto& [name, in] : v.inputs) {
    auto it = std::find_if(declared.begin(), declared.end(), [&](const InputShape& d) { return d.name == name; });
    if (it == declared.end())
      throw BadVariantId(fmt::format("case id '{}': case '{}' has no input '{}'", id, v.base, name));
    if (in.layout == InputLayout::CpuScalar && (it->shape.empty() || !it->floating))
      throw BadVariantId(fmt::format(
          "case id '{}': input '{}' cannot be +cpu (a 0-dim tensor on the CPU): only a floating input of 1 or more "
          "dimensions can",
          id, name));
    if (in.layout != InputLayout::CpuScalar && in.shape.size() != it->shape.size())
      throw BadVariantId(fmt::format("case id '{}': input '{}' has {} dimensions, not {}", id, name, it->shape.size(),
                                     in.shape.size()));
    if (in.layout == InputLayout::ChannelsLast && in.shape.size() != 4)
      throw BadVariantId(
          fmt::format("case id '{}': input '{}' has {} dimensions; +cl needs 4", id, name, in.shape.size()));
    if (in.layout == InputLayout::Transposed && in.shape.size() < 2)
      throw BadVariantId(fmt::format("case id '{}': input '{}' has {} dimension{}; +t needs 2 or more", id, name,
                                     in.shape.size(), in.shape.size() == 1 ? "" : "s"));
    inputs[static_cast<size_t>(it - declared.begin())] = in;
  }
  std::unique_ptr<Workload> inner = base.workload->with_inputs(inputs);
  if (!inner) throw BadVariantId(fmt::format("case '{}' cannot be made at the sizes and layouts of '{}'", v.base, id));
  return inner;
}

}  // namespace mpscheck
