// OpInfo's recorded samples as op cases (core/opinfo_cases.hpp): the reader turns an export's plain
// values into the arguments the op's schema takes (tagged dtypes, typed lists, keyword-only
// arguments, defaults), keeps each tensor's layout, leaves out what the replay cannot judge, refuses
// a broken file with one line; the cases carry their OpInfo name, dtype and direction, and a replayed
// case computes what the op computes.
#include "core/opinfo_cases.hpp"
#include "core/plugin_host.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace {

using namespace mpscheck;
using Dict = c10::Dict<c10::IValue, c10::IValue>;

c10::IValue list(std::vector<c10::IValue> items) {
  c10::impl::GenericList l(c10::AnyType::get());
  for (auto& i : items) l.push_back(std::move(i));
  return l;
}

Dict dict() { return Dict(c10::StringType::get(), c10::AnyType::get()); }

c10::IValue call(const std::string& opinfo, int sample, const std::string& direction, const std::string& op,
                 const std::string& overload, c10::IValue args, Dict kwargs, bool quick = true) {
  Dict d = dict();
  d.insert("opinfo", opinfo);
  d.insert("sample", sample);
  d.insert("direction", direction);
  d.insert("index", 0);
  d.insert("op", op);
  d.insert("overload", overload);
  d.insert("args", std::move(args));
  d.insert("kwargs", kwargs);
  d.insert("also", list({}));
  d.insert("quick", quick);
  return d;
}

std::filesystem::path write_export(const std::string& name, std::vector<c10::IValue> calls, int64_t format = 1) {
  Dict top = dict();
  top.insert("format", format);
  top.insert("torch", "2.13.0");
  top.insert("max_samples", 4);
  top.insert("entries", list({}));
  top.insert("calls", list(std::move(calls)));
  const auto path = std::filesystem::temp_directory_path() / ("mpscheck-opinfo-" + name + ".pt");
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(top));
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

TEST(OpInfoCases, ArgumentsTakeTheSchemasTypesAndTensorsKeepTheirLayout) {
  at::manual_seed(0);
  const at::Tensor a = at::randn({4, 3});
  const at::Tensor wide = at::randn({5, 6});
  const at::Tensor b_t = wide.narrow(1, 1, 3).t();  // [3, 5] strides (1, 6) offset 1
  const at::Tensor bias = at::randn({5});
  Dict mm_kwargs = dict();
  mm_kwargs.insert("beta", 2);  // a Python int where the schema says Scalar
  const auto file =
      write_export("types", {call("addmm", 0, "forward", "aten::addmm", "", list({bias, a, b_t}), mm_kwargs),
                             call("sum", 1, "forward", "aten::sum", "dim_IntList", list({a, list({1}), true}),
                                  [] {
                                    Dict k = dict();
                                    k.insert("dtype", "dtype:Double");
                                    return k;
                                  }()),
                             // A conversion and a view: not what the replay judges.
                             call("to", 0, "forward", "aten::_to_copy", "", list({a}), dict()),
                             call("t", 0, "forward", "aten::t", "", list({a}), dict())});
  const OpInfoCalls calls = read_opinfo_calls(file);
  std::filesystem::remove(file);
  ASSERT_EQ(calls.calls.size(), 2u);
  const OpInfoCall& addmm = calls.calls[0];
  EXPECT_EQ(addmm.opinfo, "addmm");
  ASSERT_EQ(addmm.call.args.size(), 5u);  // self, mat1, mat2, beta, alpha (its default)
  EXPECT_EQ(addmm.call.args[2].toTensor().strides(), b_t.strides());
  EXPECT_EQ(addmm.call.args[2].toTensor().storage_offset(), 1);
  EXPECT_EQ(addmm.call.args[3].toInt(), 2);
  EXPECT_EQ(addmm.call.args[4].toInt(), 1);
  const OpInfoCall& sum = calls.calls[1];
  EXPECT_TRUE(sum.call.args[1].isIntList());
  EXPECT_EQ(sum.call.args[3].toInt(), static_cast<int64_t>(c10::kDouble));
  std::map<std::string, int> left_out(calls.not_replayed.begin(), calls.not_replayed.end());
  EXPECT_EQ(left_out["a conversion, copy or fill"], 1);
  EXPECT_EQ(left_out["a view of its input"], 1);

  // Three cases per call, one per floating dtype, each computing what the op computes.
  const auto workloads = make_opinfo_workloads(calls);
  ASSERT_EQ(workloads.size(), 6u);
  EXPECT_EQ(workloads[0]->id(), "op/opinfo/addmm/f32/s0-addmm/forward");
  EXPECT_EQ(workloads[2]->id(), "op/opinfo/addmm/bf16/s0-addmm/forward");
  EXPECT_EQ(workloads[2]->dtype(), c10::kBFloat16);
  EXPECT_EQ(workloads[3]->id(), "op/opinfo/sum/f32/s1-sum.dim_IntList/forward");
  EXPECT_EQ(workloads[0]->family(), "matmul");
  const auto tags = workloads[0]->tags();
  EXPECT_NE(std::find(tags.begin(), tags.end(), "opinfo"), tags.end());
  EXPECT_NE(std::find(tags.begin(), tags.end(), "noncontiguous"), tags.end());
  EXPECT_EQ(std::find(tags.begin(), tags.end(), "full-only"), tags.end());
  const Outputs out = workloads[0]->instantiate({}, {})->run();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::allclose(out[0].value, at::addmm(bias, a, b_t, 2, 1)));
  const Outputs summed = workloads[3]->instantiate({}, {})->run();
  EXPECT_EQ(summed[0].value.scalar_type(), c10::kDouble);
  EXPECT_TRUE(at::allclose(summed[0].value, a.to(c10::kDouble).sum({1}, true)));
}

TEST(OpInfoCases, ASampleBeyondTheQuickSelectionIsFullOnlyAndRepeatedOpsCarryTheirOrder) {
  const at::Tensor x = at::randn({3});
  c10::IValue first = call("mul", 2, "backward", "aten::mul", "Tensor", list({x, x}), dict(), false);
  c10::IValue second = call("mul", 2, "backward", "aten::mul", "Tensor", list({x, x * 2}), dict(), false);
  second.toGenericDict().insert_or_assign("index", 1);
  const auto file = write_export("repeat", {first, second});
  const OpInfoCalls calls = read_opinfo_calls(file);
  std::filesystem::remove(file);
  const auto workloads = make_opinfo_workloads(calls);
  ASSERT_EQ(workloads.size(), 6u);
  EXPECT_EQ(workloads[0]->id(), "op/opinfo/mul/f32/s2-mul.Tensor-0/backward");
  EXPECT_EQ(workloads[3]->id(), "op/opinfo/mul/f32/s2-mul.Tensor-1/backward");
  const auto tags = workloads[0]->tags();
  EXPECT_NE(std::find(tags.begin(), tags.end(), "full-only"), tags.end());
  EXPECT_NE(std::find(tags.begin(), tags.end(), "backward"), tags.end());
}

// `x * 0.5` reaches the dispatcher as mul.Tensor with a number, and a norm asked for float32 names it:
// the number is a scalar on every side (a float16 side stays float16), and the gold run computes the
// norm in float64 rather than failing to narrow its float64 input to the float32 it was asked for.
TEST(OpInfoCases, NumbersStayScalarsAndAFloat32DtypeArgumentIsFloat64OnTheGoldRun) {
  const at::Tensor x = at::randn({4, 3});
  Dict norm_kwargs = dict();
  norm_kwargs.insert("dtype", "dtype:Float");
  const auto file =
      write_export("scalars", {call("mul", 0, "forward", "aten::mul", "Tensor", list({x, 0.5}), dict()),
                               call("norm", 0, "forward", "aten::linalg_vector_norm", "", list({x}), norm_kwargs)});
  const OpInfoCalls calls = read_opinfo_calls(file);
  std::filesystem::remove(file);
  ASSERT_EQ(calls.calls.size(), 2u);
  const auto workloads = make_opinfo_workloads(calls);
  Placement half;
  half.dtype = c10::kHalf;
  const Outputs scaled = workloads[1]->instantiate({}, half)->run();  // mul at f16
  EXPECT_EQ(scaled[0].value.scalar_type(), c10::kHalf);
  EXPECT_TRUE(at::allclose(scaled[0].value.to(c10::kFloat), x * 0.5, 1e-3, 1e-3));
  Placement gold;
  gold.dtype = c10::kDouble;
  const Outputs normed = workloads[3]->instantiate({}, gold)->run();  // norm, f32 case, on the gold run
  EXPECT_EQ(normed[0].value.scalar_type(), c10::kDouble);
  EXPECT_NEAR(normed[0].value.item<double>(), x.to(c10::kDouble).norm().item<double>(), 1e-12);
  const Outputs reference = workloads[3]->instantiate({}, {})->run();
  EXPECT_EQ(reference[0].value.scalar_type(), c10::kFloat);
}

TEST(OpInfoCases, ABrokenFileIsOneLineNamingItAndTheCommandThatRemakesIt) {
  const auto other_format = write_export("format", {}, 7);
  try {
    read_opinfo_calls(other_format);
    ADD_FAILURE() << "a format-7 file was read";
  } catch (const PluginLoadError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(other_format.string()), std::string::npos) << m;
    EXPECT_NE(m.find("format 7"), std::string::npos) << m;
    EXPECT_NE(m.find("scripts/export-opinfo.py"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  std::filesystem::remove(other_format);
  const auto garbage = std::filesystem::temp_directory_path() / "mpscheck-opinfo-garbage.pt";
  std::ofstream(garbage) << "not a pickle";
  try {
    read_opinfo_calls(garbage);
    ADD_FAILURE() << "a file of text was read";
  } catch (const PluginLoadError& e) {
    // The unpickler's first sentence only: its advice about checkpoint files is not this file's.
    const std::string m = e.what();
    EXPECT_NE(m.find("not a ZIP archive"), std::string::npos) << m;
    EXPECT_EQ(m.find("checkpoint"), std::string::npos) << m;
  }
  std::filesystem::remove(garbage);
  EXPECT_THROW(read_opinfo_calls("/nonexistent/opinfo-calls.pt"), PluginLoadError);
}

}  // namespace
