// `cmake --install` gives a working binary, its plugins and an SDK an out-of-tree plugin builds against.
#include "harness.hpp"

#include <gtest/gtest.h>
#include <torch/version.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace mpscheck::testing;

TEST(Install, OutOfTreePluginBuildsAgainstTheInstalledSdkAndRuns) {
  const std::string dir = fresh_dir("install");
  const std::string prefix = dir + "/prefix";
  auto r = run_shell("cmake --install '" + std::string(MPSCHECK_BUILD_DIR) + "' --prefix '" + prefix + "'", dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(std::filesystem::exists(prefix + "/include/mpscheck/op.hpp"));
  EXPECT_TRUE(std::filesystem::exists(prefix + "/lib/cmake/mpscheck/mpscheckConfig.cmake"));
  EXPECT_TRUE(std::filesystem::exists(prefix + "/lib/mpscheck/plugins/mpscheck_ops_shape.so"));
  EXPECT_FALSE(std::filesystem::exists(prefix + "/lib/mpscheck/plugins/mpscheck_faults.so"));  // test-only

  r = run_shell("cmake -S '" + std::string(MPSCHECK_SOURCE_DIR) +
                    "/examples/custom_plugin' -B example -DCMAKE_BUILD_TYPE=Release "
                    "-DCMAKE_PREFIX_PATH='" +
                    prefix + "' && cmake --build example",
                dir);
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(r.out.size() > 3000 ? r.out.size() - 3000 : 0) << r.err;

  r = run_shell("NO_COLOR=1 '" + prefix +
                    "/bin/mpscheck' --plugin-dir example --filter op/custom/ --target cpu --quick "
                    "--min-time 0.01",
                dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto cases = cases_by_id(read_json_file(dir + "/mpscheck-report/report.json"));
  EXPECT_EQ(cases.size(), 4u);  // 2 variants x forward/backward
  for (const auto& [id, c] : cases) {
    EXPECT_EQ(c["plugin"], "custom-example") << id;
    EXPECT_EQ(c["status"], "pass") << id;
  }
  // The installed binary found its own plugins from bin/../lib/mpscheck/plugins.
  r = run_shell("'" + prefix + "/bin/mpscheck' --list --filter op/shape/cat/f32/contiguous/forward", dir);
  EXPECT_NE(r.out.find("op/shape/cat/f32/contiguous/forward"), std::string::npos) << r.err;
}

// One LibTorch per process (issue 23 item 8): the installed SDK records the LibTorch mpscheck was
// built with, and a plugin project pointed at another one stops at configure time, in one line
// naming both, instead of building a plugin the host would refuse (or, before, die loading).
TEST(Install, APluginConfiguredAgainstAnotherLibTorchStopsAtConfigureInOneLine) {
  const std::string dir = fresh_dir("install-other-libtorch");
  const std::string prefix = dir + "/prefix";
  auto r = run_shell("cmake --install '" + std::string(MPSCHECK_BUILD_DIR) + "' --prefix '" + prefix + "'", dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Another LibTorch's CMake package, as Debian's libtorch-dev installs it under /usr/lib/<arch>/cmake/Torch.
  const std::string other = dir + "/other/share/cmake/Torch";
  std::filesystem::create_directories(other);
  run_shell("printf 'set(PACKAGE_VERSION 1.13.1)\\n' > '" + other +
                "/TorchConfigVersion.cmake' && "
                "printf 'message(FATAL_ERROR \"loaded\")\\n' > '" +
                other + "/TorchConfig.cmake'",
            dir);
  r = run_shell("cmake -S '" + std::string(MPSCHECK_SOURCE_DIR) +
                    "/examples/custom_plugin' -B example "
                    "-DCMAKE_PREFIX_PATH='" +
                    prefix + "' -DTorch_DIR='" + other + "'",
                dir);
  EXPECT_NE(r.exit_code, 0);
  const std::string text = r.out + r.err;
  const auto at = text.find("mpscheck: this plugin would link LibTorch 1.13.1 (" + other + ")");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_NE(line.find("but mpscheck was built with LibTorch " + std::to_string(TORCH_VERSION_MAJOR) + "."),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("configure with -DTorch_DIR="), std::string::npos) << line;
  EXPECT_EQ(text.find("\"loaded\""), std::string::npos) << "the other LibTorch's package was never read: " << text;
}

// Every installed header is the SDK's, whole (issue 27): an out-of-tree plugin that includes each
// header under include/mpscheck/ (the list read from the install, so a header added later is
// covered) builds and links against mpscheck::sdk alone, and the installed host loads it. A header
// that needed something the SDK's target does not provide (nlohmann::json for the host's result
// model, once) or the host's own code fails here.
TEST(Install, APluginIncludingEveryInstalledHeaderBuildsLinksAndLoads) {
  namespace fs = std::filesystem;
  const std::string dir = fresh_dir("install-every-header");
  const std::string prefix = dir + "/prefix";
  auto r = run_shell("cmake --install '" + std::string(MPSCHECK_BUILD_DIR) + "' --prefix '" + prefix + "'", dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  // The top-level headers first (a detail/ header is written to be included by them), then the rest.
  std::vector<std::string> top, detail;
  for (const auto& e : fs::recursive_directory_iterator(prefix + "/include/mpscheck")) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), prefix + "/include").generic_string();
    (rel.find('/', std::string("mpscheck/").size()) == std::string::npos ? top : detail).push_back(rel);
  }
  std::sort(top.begin(), top.end());
  std::sort(detail.begin(), detail.end());
  ASSERT_GE(top.size(), 5u);
  std::string source = "// Generated by test_install.cpp: every installed SDK header.\n";
  for (const auto* list : {&top, &detail})
    for (const auto& h : *list) source += "#include <" + h + ">\n";
  source += R"src(
using namespace mpscheck::op;
MPSCHECK_CATALOG(every_header_cases) {
  Family family(catalog, "every_header");
  family.tolerance("activation").dtypes(dtypes::f32).variants({Variant::contiguous()});
  family.op("relu", {Arg::randn("x", {4, 4})}, [](const at::Tensor& x) { return at::relu(x); }, "torch.relu(x)").add();
}
MPSCHECK_PLUGIN("every-header", "1.0.0")
)src";
  fs::create_directories(dir + "/plugin");
  std::ofstream(dir + "/plugin/every_header.cpp") << source;
  std::ofstream(dir + "/plugin/CMakeLists.txt") << "cmake_minimum_required(VERSION 3.18)\n"
                                                   "project(every_header LANGUAGES CXX)\n"
                                                   "find_package(mpscheck REQUIRED)\n"
                                                   "mpscheck_add_plugin(every_header every_header.cpp)\n"
                                                   // Linked as the host would load it: no symbol left to chance.
                                                   "target_link_options(every_header PRIVATE LINKER:--no-undefined)\n";
  r = run_shell("cmake -S plugin -B plugin-build -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH='" + prefix +
                    "' && cmake --build plugin-build",
                dir);
  ASSERT_EQ(r.exit_code, 0) << source << r.out.substr(r.out.size() > 3000 ? r.out.size() - 3000 : 0) << r.err;

  r = run_shell("'" + prefix + "/bin/mpscheck' --plugin-dir plugin-build --list --filter op/every_header/", dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("op/every_header/relu/f32/contiguous/forward"), std::string::npos) << r.out << r.err;
}
