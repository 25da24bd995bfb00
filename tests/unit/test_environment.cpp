// The environment block's warnings: a CPU baseline that would make every speed-up lie is named.
#include "core/environment.hpp"

#include <gtest/gtest.h>
#include <ATen/ATen.h>
#include <torch/version.h>

namespace mpscheck {
namespace {

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

TEST(EnvironmentWarnings, ReferenceBlasLibraryIsFlagged) {
  nlohmann::json env{{"blas", {"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"}}, {"threads", 2}, {"cores", 2}};
  const auto w = environment_warnings(env);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("reference BLAS"), std::string::npos);
  env["blas"] = {"/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"};
  EXPECT_TRUE(environment_warnings(env).empty());
}

// The pip wheel links MKL statically: no BLAS library shows in the process map, so the measured
// throughput is what catches a slow baseline.
TEST(EnvironmentWarnings, SlowMatmulIsFlaggedWhateverTheLinking) {
  nlohmann::json env{{"blas", nlohmann::json::array()}, {"threads", 2}, {"cores", 2}, {"matmul_gflops", 1.2}};
  const auto w = environment_warnings(env);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("1.2 GFLOP/s"), std::string::npos);
  EXPECT_NE(w[0].find("not an optimised one"), std::string::npos);
  env["matmul_gflops"] = 40.0;
  EXPECT_TRUE(environment_warnings(env).empty());
  // A fast-looking library name does not excuse a measured slow multiply.
  env["blas"] = {"/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"};
  env["matmul_gflops"] = 0.8;
  EXPECT_TRUE(mentions(environment_warnings(env), "0.8 GFLOP/s"));
}

TEST(EnvironmentWarnings, MpsFallbackAndThreadsAreFlagged) {
  nlohmann::json env{{"blas", nlohmann::json::array()},
                     {"threads", 1},
                     {"cores", 8},
                     {"variables", {{"PYTORCH_ENABLE_MPS_FALLBACK", "1"}}}};
  const auto w = environment_warnings(env);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("PYTORCH_ENABLE_MPS_FALLBACK"), std::string::npos);
  EXPECT_NE(w[1].find("--threads 8"), std::string::npos);
}

// This machine's LibTorch must be one whose speed-ups mean something: its matmul is well above the
// slow-BLAS line (the reference BLAS manages about 1-3 GFLOP/s here).
TEST(EnvironmentWarnings, ThisMachinesBaselineMultipliesAtOptimisedSpeed) {
  const double gflops = measured_matmul_gflops();
  EXPECT_GT(gflops, kSlowBlasGflops) << "this LibTorch multiplies at " << gflops
                                     << " GFLOP/s: it is not using an optimised BLAS";
}

// `blas` names the library from what LibTorch reports, never "none" or [] while MKL runs: the pip
// wheel links MKL statically, so no library shows in the process map (issue: `blas []` on MKL).
TEST(Environment, BlasIsNamedFromWhatLibTorchReports) {
  const std::string mkl_info =
      "ATen/Parallel:\n\tat::get_num_threads() : 2\nIntel(R) oneAPI Math Kernel Library "
      "Version 2024.2-Product Build 20240605 for Intel(R) 64 architecture applications\n";
  EXPECT_EQ(blas_name(mkl_info, "  - BLAS_INFO=mkl\n", {}),
            "MKL 2024.2 (ATen reports it at run time); LibTorch's build: BLAS_INFO=mkl");
  EXPECT_EQ(blas_name("", "  - BLAS_INFO=open\n", {"/usr/lib/x86_64-linux-gnu/libopenblas.so.0"}),
            "OpenBLAS (LibTorch's build: BLAS_INFO=open); loaded: libopenblas.so.0");
  EXPECT_EQ(blas_name("", "  - BLAS_INFO=accelerate, LAPACK_INFO=accelerate\n", {}),
            "Accelerate (LibTorch's build: BLAS_INFO=accelerate)");
  EXPECT_EQ(blas_name("", "", {}), "unknown (LibTorch names no BLAS and none is loaded)");
  // This machine's LibTorch (the 2.13 wheel) runs MKL: the block must say so.
  const auto env = collect_environment({"cpu", 0});
  const std::string here = env.at("blas").get<std::string>();
  EXPECT_EQ(here.find("unknown"), std::string::npos) << here;
  if (at::show_config().find("BLAS_INFO=mkl") != std::string::npos) {
    EXPECT_NE(here.find("MKL"), std::string::npos) << here;
  }
  EXPECT_TRUE(env.at("blas_libraries").is_array());
}

TEST(Environment, BlockNamesTheLibTorchItWasBuiltAgainst) {
  const auto env = collect_environment({"cpu", 7});
  EXPECT_EQ(env.at("torch_version").get<std::string>(), TORCH_VERSION);
  EXPECT_EQ(env.at("seed").get<std::uint64_t>(), 7u);
  EXPECT_TRUE(env.contains("matmul_gflops"));
}

// The CUDA toolkit is read from LibTorch's own build text, in the form its CUDA builds print it
// (top-level "CUDA Runtime" and "CuDNN" items; the nested "Built with" line is not a second CuDNN).
TEST(Environment, CudaVersionsComeFromTheBuildConfigurationOnlyWhereBuiltWithCuda) {
  const std::string cuda_build =
      "PyTorch built with:\n"
      "  - GCC 9.3\n"
      "  - OpenMP 201511 (a.k.a. OpenMP 4.5)\n"
      "  - CUDA Runtime 12.1\n"
      "  - NVCC architecture flags: -gencode;arch=compute_80,code=sm_80\n"
      "  - CuDNN 8.9.2\n"
      "    - Built with CuDNN 8.9.0\n"
      "  - Magma 2.6.1\n"
      "  - Build settings: BLAS_INFO=mkl, CUDA_VERSION=12.1, CUDNN_VERSION=8.9.2, USE_CUDA=ON\n";
  EXPECT_EQ(cuda_versions(cuda_build), "CUDA Runtime 12.1, CuDNN 8.9.2");
  EXPECT_EQ(cuda_versions("PyTorch built with:\n  - GCC 11.2\n  - Build settings: USE_CUDA=OFF\n"), "");
  // This machine's LibTorch is the CPU wheel: nothing to report, so no `cuda` key in its block.
  EXPECT_EQ(cuda_versions(at::show_config()), "");
}

}  // namespace
}  // namespace mpscheck

// Duplicated runtimes are what a triager asks about first: two OpenMP runtimes in one process
// compete for threads. This process has the wheel's own libgomp and no other.
TEST(Environment, OpenMpRuntimesAreListedAndTwoAreAWarning) {
  EXPECT_EQ(mpscheck::openmp_runtimes_among({"/usr/lib/libc.so.6", "/opt/torch/lib/libgomp.so.1",
                                             "/opt/homebrew/lib/libomp.dylib", "/usr/lib/libgomp-plugin.txt",
                                             "/x/libompl.so"}),
            (std::vector<std::string>{"/opt/homebrew/lib/libomp.dylib", "/opt/torch/lib/libgomp.so.1"}));
  EXPECT_EQ(mpscheck::openmp_runtimes_among({"/w/torch.libs/libgomp-a34b3233.so.1", "/opt/intel/libiomp5.so"}).size(),
            2u);
  const auto here = mpscheck::openmp_runtimes_among(mpscheck::loaded_libraries());
  ASSERT_EQ(here.size(), 1u) << ::testing::PrintToString(here);
  EXPECT_NE(here[0].find("libgomp"), std::string::npos) << here[0];
  nlohmann::json env{{"openmp_runtimes", {"/opt/torch/lib/libgomp.so.1", "/opt/homebrew/lib/libomp.dylib"}}};
  const auto warnings = mpscheck::environment_warnings(env);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("2 OpenMP runtimes are loaded in one process (/opt/torch/lib/libgomp.so.1, "
                             "/opt/homebrew/lib/libomp.dylib)"),
            std::string::npos)
      << warnings[0];
  env["openmp_runtimes"] = nlohmann::json::array({here[0]});
  EXPECT_TRUE(mpscheck::environment_warnings(env).empty());
}

// A float16/bfloat16 CPU target is this CPU's own kernels in the dtype: the note names what they
// depend on, and no other target gets one.
TEST(Environment, AReducedPrecisionCpuTargetNamesTheKernelsItsVerdictsDependOn) {
  const nlohmann::json env{{"cpu_kernels", "AVX2"}, {"cpu_reduced_precision", {"f16c"}}};
  const std::string note = mpscheck::reduced_cpu_target_note(env, "cpu:bfloat16");
  EXPECT_NE(note.find("cpu:bfloat16 is this CPU's own bfloat16 kernels (ATen's AVX2 kernels; the CPU's "
                      "float16/bfloat16 features: f16c)"),
            std::string::npos)
      << note;
  EXPECT_NE(mpscheck::reduced_cpu_target_note({{"cpu_kernels", "DEFAULT"}}, "cpu:float16").find("features: none"),
            std::string::npos);
  for (const char* other : {"cpu", "cpu:float32", "sim:bfloat16", "mps:float16", "cuda"})
    EXPECT_EQ(mpscheck::reduced_cpu_target_note(env, other), "") << other;
  // This machine's block says which kernels run.
  const nlohmann::json here = mpscheck::collect_environment({});
  EXPECT_FALSE(here.value("cpu_kernels", std::string()).empty());
  EXPECT_TRUE(here.at("cpu_reduced_precision").is_array());
}
