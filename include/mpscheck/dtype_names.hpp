// One table of dtype spellings, and every form derived from it:
//   name    "bfloat16"  what --target, --input, reports, messages and reproducers say (PyTorch's
//                       Python name without `torch.`);
//   id      "bf16"      the short form inside case ids (op/activation/gelu/bf16/contiguous/forward);
//   python  "torch.bfloat16";
//   alias   "half"      one more word a user may type for it, where PyTorch has one.
// A dtype the table lacks keeps c10's own name in every form, so nothing new is ever invented.
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>
#include <string>
#include <string_view>

namespace mpscheck {

struct DtypeSpelling {
  c10::ScalarType type;
  const char* name;
  const char* id;
  const char* alias;  // nullptr: none
};

// In the order reports list dtypes: the ones users migrate to first, then the rest.
inline constexpr DtypeSpelling kDtypeSpellings[] = {
    {c10::kFloat, "float32", "f32", "float"},      {c10::kHalf, "float16", "f16", "half"},
    {c10::kBFloat16, "bfloat16", "bf16", nullptr}, {c10::kDouble, "float64", "f64", "double"},
    {c10::kLong, "int64", "i64", "long"},          {c10::kInt, "int32", "i32", "int"},
    {c10::kShort, "int16", "i16", "short"},        {c10::kChar, "int8", "i8", nullptr},
    {c10::kByte, "uint8", "u8", nullptr},          {c10::kBool, "bool", "bool", nullptr},
};

inline const DtypeSpelling* dtype_spelling(c10::ScalarType t) {
  for (const DtypeSpelling& s : kDtypeSpellings)
    if (s.type == t) return &s;
  return nullptr;
}

// "bfloat16"; c10's name ("ComplexFloat") for a dtype outside the table.
inline std::string dtype_name(c10::ScalarType t) {
  const DtypeSpelling* s = dtype_spelling(t);
  return s ? s->name : c10::toString(t);
}
// "bf16", for case ids; c10's name outside the table.
inline std::string dtype_id(c10::ScalarType t) {
  const DtypeSpelling* s = dtype_spelling(t);
  return s ? s->id : c10::toString(t);
}
// "torch.bfloat16", for reproducers.
inline std::string dtype_python(c10::ScalarType t) { return "torch." + dtype_name(t); }

// The dtype a word names: its name, id or alias ("bfloat16", "bf16"; "float16", "f16", "half").
inline std::optional<c10::ScalarType> dtype_from_word(std::string_view word) {
  for (const DtypeSpelling& s : kDtypeSpellings)
    if (word == s.name || word == s.id || (s.alias && word == s.alias)) return s.type;
  return std::nullopt;
}

}  // namespace mpscheck
