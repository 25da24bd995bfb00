// The op SDK's inputs: how an Arg becomes a tensor on the C++ side and the same tensor in the
// Python reproducer (draws from the seeded generator, storage shapes, layout views, dtype names).
// Part of <mpscheck/op.hpp>, which includes it after declaring Arg; include that instead.
#pragma once

#include <mpscheck/dtype_names.hpp>

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mpscheck::op {

// The dtype spellings (mpscheck/dtype_names.hpp), for case code written inside mpscheck::op.
using ::mpscheck::dtype_id;
using ::mpscheck::dtype_name;
using ::mpscheck::dtype_python;

inline std::string layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Transposed: return "transposed";
    case Layout::Sliced: return "sliced";
    case Layout::ChannelsLast: return "channels_last";
    case Layout::Expanded: return "expanded";
  }
  return "";
}

inline std::vector<int64_t> storage_shape(const Arg& a) {
  std::vector<int64_t> s = a.shape;
  switch (a.layout) {
    case Layout::Contiguous: break;
    case Layout::Transposed:
      if (s.size() < 2) throw std::logic_error("transposed layout needs 2+ dims: " + a.name);
      std::swap(s[s.size() - 1], s[s.size() - 2]);
      break;
    case Layout::Sliced:
      if (s.empty()) throw std::logic_error("sliced layout needs 1+ dims: " + a.name);
      s.back() = 2 * s.back() + 1;
      break;
    case Layout::ChannelsLast:
      if (s.size() != 4) throw std::logic_error("channels_last layout needs 4 dims: " + a.name);
      s = {s[0], s[2], s[3], s[1]};
      break;
    case Layout::Expanded:
      if (s.empty()) throw std::logic_error("expanded layout needs 1+ dims: " + a.name);
      s[0] = 1;
      break;
  }
  return s;
}

// `base` moved `a.storage_offset` elements into a longer buffer whose head is zeros: the same
// values and shape, storage offset a.storage_offset. Differentiable, so `base` stays the leaf.
inline at::Tensor apply_storage_offset(const at::Tensor& base, const Arg& a) {
  if (a.storage_offset <= 0) return base;
  const at::Tensor buffer = at::cat({at::zeros({a.storage_offset}, base.options()), base.reshape({-1})});
  return buffer.narrow(0, a.storage_offset, base.numel()).view(base.sizes());
}

inline std::string python_storage_offset(const std::string& base, const Arg& a) {
  if (a.storage_offset <= 0) return base;
  const std::string k = std::to_string(a.storage_offset);
  return "torch.cat([torch.zeros(" + k + ", dtype=" + base + ".dtype, device=" + base + ".device), " + base +
         ".reshape(-1)])[" + k + ":].view(" + base + ".shape)";
}

inline at::Tensor apply_layout(const at::Tensor& base, const Arg& a) {
  switch (a.layout) {
    case Layout::Contiguous: return base;
    case Layout::Transposed: return base.transpose(-1, -2);
    case Layout::Sliced: return base.slice(-1, 1, c10::nullopt, 2);
    case Layout::ChannelsLast: return base.permute({0, 3, 1, 2});
    case Layout::Expanded: return base.expand(a.shape);
  }
  return base;
}

inline std::string python_layout(const std::string& base, const Arg& a) {
  std::ostringstream s;
  switch (a.layout) {
    case Layout::Contiguous: return base;
    case Layout::Transposed: return base + ".transpose(-1, -2)";
    case Layout::Sliced: return base + "[..., 1::2]";
    case Layout::ChannelsLast: return base + ".permute(0, 3, 1, 2)";
    case Layout::Expanded:
      s << base << ".expand([";
      for (size_t i = 0; i < a.shape.size(); ++i) s << (i ? ", " : "") << a.shape[i];
      s << "])";
      return s.str();
  }
  return base;
}

inline std::string python_list(const std::vector<int64_t>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << "]";
  return s.str();
}

inline std::string python_number(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  std::string r = s.str();
  if (r.find_first_of(".e") == std::string::npos && r.find("inf") == std::string::npos) r += ".0";
  return r;
}

// The concrete dtype an arg has on a placement, for a case of dtype `case_dtype`.
inline c10::ScalarType arg_dtype(const Arg& a, c10::ScalarType case_dtype, c10::ScalarType placed) {
  c10::ScalarType t = a.dtype == c10::ScalarType::Undefined ? case_dtype : a.dtype;
  return c10::isFloatingType(t) ? placed : t;
}

// Draws the CPU base tensor of `a` (before dtype conversion and layout) from `gen`.
inline at::Tensor draw(const Arg& a, c10::ScalarType case_dtype, at::Generator& gen) {
  const auto shape = storage_shape(a);
  c10::ScalarType t = a.dtype == c10::ScalarType::Undefined ? case_dtype : a.dtype;
  switch (a.fill) {
    case Fill::Normal:
      if (t == c10::kBool) return at::randint(0, 2, shape, gen, at::TensorOptions().dtype(c10::kLong)).to(c10::kBool);
      if (!c10::isFloatingType(t)) return at::randint(-8, 8, shape, gen, at::TensorOptions().dtype(c10::kLong)).to(t);
      return at::randn(shape, gen, at::kFloat);
    case Fill::Uniform:
      if (!c10::isFloatingType(t) && t != c10::kBool)
        return at::randint(static_cast<int64_t>(a.lo), static_cast<int64_t>(a.hi), shape, gen,
                           at::TensorOptions().dtype(c10::kLong))
            .to(t);
      return at::rand(shape, gen, at::kFloat) * (a.hi - a.lo) + a.lo;
    case Fill::Integers:
      return at::randint(static_cast<int64_t>(a.lo), static_cast<int64_t>(a.hi), shape, gen,
                         at::TensorOptions().dtype(c10::kLong))
          .to(t);
    case Fill::Bool: return at::randint(0, 2, shape, gen, at::TensorOptions().dtype(c10::kLong)).to(c10::kBool);
  }
  return {};
}

inline std::string python_draw(const Arg& a, c10::ScalarType case_dtype) {
  const std::string shape = python_list(storage_shape(a));
  c10::ScalarType t = a.dtype == c10::ScalarType::Undefined ? case_dtype : a.dtype;
  const bool integral = !c10::isFloatingType(t) && t != c10::kBool;
  switch (a.fill) {
    case Fill::Normal:
      if (t == c10::kBool) return "torch.randint(0, 2, " + shape + ", generator=gen).bool()";
      if (integral) return "torch.randint(-8, 8, " + shape + ", generator=gen).to(" + dtype_python(t) + ")";
      return "torch.randn(" + shape + ", generator=gen)";
    case Fill::Uniform:
      if (integral)
        return "torch.randint(" + std::to_string(static_cast<int64_t>(a.lo)) + ", " +
               std::to_string(static_cast<int64_t>(a.hi)) + ", " + shape + ", generator=gen).to(" + dtype_python(t) +
               ")";
      return "torch.rand(" + shape + ", generator=gen) * " + python_number(a.hi - a.lo) + " + " + python_number(a.lo);
    case Fill::Integers:
      return "torch.randint(" + std::to_string(static_cast<int64_t>(a.lo)) + ", " +
             std::to_string(static_cast<int64_t>(a.hi)) + ", " + shape + ", generator=gen).to(" + dtype_python(t) + ")";
    case Fill::Bool: return "torch.randint(0, 2, " + shape + ", generator=gen).bool()";
  }
  return {};
}

}  // namespace mpscheck::op
