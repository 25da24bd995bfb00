// TorchScript instances on each placement: only floating state changes dtype (an int64 index
// buffer stays int64, as with nn.Module.to(dtype)), and the reduced-precision baseline rounds the
// weights as well as the inputs. The .pt files come from tests/fixtures/export_owned_models.py,
// run once with the installed torch wheel's python3.
#include "core/torchscript_workload.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>

#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace mpscheck;

namespace {

class OwnedTorchScript : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("mpscheck-owned-ts-" + std::to_string(::getpid()))).string();
    fs::create_directories(dir_);
    const fs::path script = fs::path(MPSCHECK_SOURCE_DIR) / "tests" / "fixtures" / "export_owned_models.py";
    const std::string cmd = "cd '" + dir_ + "' && python3 '" + script.string() + "' . >export.log 2>&1";
    exported_ = std::system(cmd.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void SetUp() override { ASSERT_TRUE(exported_) << "python3 with torch could not export the models into " << dir_; }

  static std::unique_ptr<Workload> infer(const std::string& name, const std::string& input) {
    auto ws = make_torchscript_workloads(torchscript_options(dir_ + "/" + name + ".pt", {input}), false);
    return std::move(ws.front());
  }

  static inline std::string dir_;
  static inline bool exported_ = false;
};

Placement on(c10::ScalarType dtype, Side side = Side::Target) { return Placement{c10::Device(c10::kCPU), dtype, side}; }

}  // namespace

// table.index_select(0, position_ids) with an int64 buffer: jit::Module::to(device, dtype) made
// the buffer float64/bfloat16 and index_select refused it on every target and the gold.
TEST_F(OwnedTorchScript, AnIntegerIndexBufferKeepsItsDtypeOnEveryPlacement) {
  const auto w = infer("index_buffer", "float32[6,4]");
  const Outputs ref = w->instantiate(mpscheck::Setup{}, on(c10::kFloat, Side::Reference))->run();
  ASSERT_EQ(ref.size(), 1u);
  for (const auto dtype : {c10::kDouble, c10::kHalf, c10::kBFloat16}) {
    Outputs out;
    ASSERT_NO_THROW(out = w->instantiate(mpscheck::Setup{}, on(dtype))->run()) << c10::toString(dtype);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].value.scalar_type(), dtype);
    // The same rows selected: equal to the float32 reference within the dtype's rounding.
    const double tol = dtype == c10::kDouble ? 1e-6 : dtype == c10::kHalf ? 5e-3 : 4e-2;
    EXPECT_TRUE(at::allclose(out[0].value.to(at::kFloat), ref[0].value, tol, tol)) << c10::toString(dtype);
  }
}

// y = w * x, w = 1 + 2^-10: bfloat16 rounds w to 1. The baseline from inputs rounded to bfloat16
// rounds w too (as the C++ model SDK does), so it equals the rounded input exactly; float16 keeps w.
TEST_F(OwnedTorchScript, TheReducedPrecisionBaselineRoundsWeightsAsWellAsInputs) {
  const auto w = infer("weight_only", "float32[4]");
  for (const auto dtype : {c10::kBFloat16, c10::kHalf}) {
    Placement p = on(c10::kFloat, Side::Reference);
    p.round_inputs_to = dtype;
    const Outputs rounded = w->instantiate(mpscheck::Setup{}, p)->run();
    // The instance's input: randn from the seed's own CPU generator.
    const at::Tensor x = at::randn({4}, at::detail::createCPUGenerator(0), at::kFloat);
    const at::Tensor x_rounded = x.to(dtype).to(at::kFloat);
    const double w_rounded = dtype == c10::kBFloat16 ? 1.0 : 1.0 + std::ldexp(1.0, -10);
    EXPECT_TRUE(at::allclose(rounded[0].value, x_rounded * w_rounded, 0, 1e-7))
        << c10::toString(dtype) << ": " << rounded[0].value << " vs " << x_rounded * w_rounded;
  }
}

// Python ints and bools are exact tensors, a str a byte tensor compared by equality.
TEST_F(OwnedTorchScript, NonTensorOutputsBecomeExactTensors) {
  const Outputs count = infer("int_count", "float32[16,10]")->instantiate(mpscheck::Setup{}, on(c10::kFloat))->run();
  ASSERT_EQ(count.size(), 2u);
  EXPECT_EQ(count[1].name, "out.1");
  EXPECT_EQ(count[1].value.scalar_type(), at::kLong);
  EXPECT_EQ(count[1].value.item<int64_t>(), (count[0].value > 0).sum().item<int64_t>());

  const Outputs label = infer("label", "float32[4,4]")->instantiate(mpscheck::Setup{}, on(c10::kFloat))->run();
  ASSERT_EQ(label.size(), 3u);
  EXPECT_EQ(label[1].value.scalar_type(), at::kByte);
  EXPECT_EQ(std::string(static_cast<const char*>(label[1].value.data_ptr()), label[1].value.numel()), "scat");
  EXPECT_EQ(label[2].value.scalar_type(), at::kBool);
}
