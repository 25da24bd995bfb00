// Plugin loading: good plugins, foreign libraries, version mismatches, throwing factories, duplicates.
#include "core/plugin_host.hpp"
#include "core/registry.hpp"

#include <mpscheck/plugin.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

using namespace mpscheck;
namespace fs = std::filesystem;

namespace {
// Every case the faults plugin declares: the ten planted faults, the catalog-built op it wraps
// (two layouts, forward and backward), the model with a planted layer and the model trained
// through the SDK with a planted backward, and the planted wrong results a loose verdict would pass.
const std::set<std::string> kFaultIds = {"op/faults/healthy",
                                         "op/faults/segfault",
                                         "op/faults/abort",
                                         "op/faults/terminate",
                                         "op/faults/hang",
                                         "op/faults/throw",
                                         "op/faults/unsupported",
                                         "op/faults/wobbling_reference/bf16",
                                         "op/faults/linear_last_row/bf16",
                                         "op/faults/linear_last_row/f16",
                                         "op/faults/linear_honest/bf16",
                                         "op/faults/exp_small_elements/bf16",
                                         "op/faults/bias_added_twice/bf16",
                                         "op/faults/later_call/f32",
                                         "op/faults/later_call/bf16",
                                         "op/faults/wobbling_reference/f32",
                                         "op/faults/nan",
                                         "op/faults/wrong",
                                         "op/faults/slow",
                                         "op/faults/stalled_reference",
                                         "op/faults/linear_planted/f32/contiguous/forward",
                                         "op/faults/linear_planted/f32/contiguous/backward",
                                         "op/faults/linear_planted/f32/transposed/forward",
                                         "op/faults/linear_planted/f32/transposed/backward",
                                         "model/faults/planted_fc2/infer",
                                         "model/faults/planted_backward/infer",
                                         "model/faults/planted_backward/train",
                                         "model/faults/channel_gradient/infer",
                                         "model/faults/channel_gradient/train",
                                         "op/faults/localised/bf16",
                                         "op/faults/localised/f16",
                                         "op/faults/localised_100ulp/bf16",
                                         "op/faults/index_off_by_one/bf16",
                                         "op/faults/int32_for_int64",
                                         "op/faults/complex",
                                         "op/faults/nonfinite_baseline",
                                         "op/faults/nondeterministic_other_output",
                                         "op/faults/bernoulli_biased",
                                         "op/faults/bernoulli_fair",
                                         "op/faults/fallback",
                                         "op/faults/bad_utf8"};

std::set<std::string> ids_of(const PluginHost& host) {
  std::set<std::string> ids;
  for (const auto& w : host.workloads()) ids.insert(w.workload->id());
  return ids;
}

const std::string kFixtures = MPSCHECK_FIXTURES_DIR;
const std::string kTestPlugins = MPSCHECK_TEST_PLUGINS_DIR;

std::string load_error(const std::string& file) {
  PluginHost host;
  try {
    host.load_file(file);
  } catch (const PluginLoadError& e) {
    return e.what();
  }
  return {};
}
}  // namespace

TEST(PluginHost, LoadsAGoodPluginAndItsCases) {
  PluginHost host;
  host.load_directory(kTestPlugins);
  ASSERT_EQ(host.plugins().size(), 1u);
  EXPECT_EQ(host.plugins()[0]->name, "faults");
  EXPECT_EQ(host.workloads().size(), kFaultIds.size());
  EXPECT_EQ(ids_of(host), kFaultIds);
  EXPECT_TRUE(host.warnings().empty());
  const Registry registry(host.workloads());
  ASSERT_NE(registry.find("op/faults/healthy"), nullptr);
  EXPECT_EQ(registry.find("op/faults/healthy")->plugin->name, "faults");
}

TEST(PluginHost, ForeignSharedLibraryIsRefusedByName) {
  const std::string file = kFixtures + "/fixture_not_a_plugin/fixture_not_a_plugin.so";
  const std::string err = load_error(file);
  EXPECT_NE(err.find(file), std::string::npos) << err;
  EXPECT_NE(err.find("not an mpscheck plugin"), std::string::npos) << err;
}

TEST(PluginHost, WrongApiVersionIsRefusedNamingBothVersions) {
  const std::string err = load_error(kFixtures + "/fixture_wrong_api/fixture_wrong_api.so");
  EXPECT_NE(err.find("API version 999"), std::string::npos) << err;
  EXPECT_NE(err.find("speaks version " + std::to_string(mpscheck::kPluginApiVersion)), std::string::npos) << err;
}

TEST(PluginHost, ThrowingFactoryIsReportedWithItsMessage) {
  const std::string err = load_error(kFixtures + "/fixture_throwing_factory/fixture_throwing_factory.so");
  EXPECT_NE(err.find("cannot create cases"), std::string::npos) << err;
  EXPECT_NE(err.find("throwing-factory"), std::string::npos) << err;
}

TEST(PluginHost, UnknownToleranceFamilyIsRefusedNamingPluginCaseAndFamily) {
  const std::string file = kFixtures + "/fixture_unknown_tolerance/fixture_unknown_tolerance.so";
  PluginHost host;
  std::string err;
  try {
    host.load_file(file);
  } catch (const PluginLoadError& e) {
    err = e.what();
  }
  ASSERT_FALSE(err.empty()) << "a case naming tolerance family 'convolution' was accepted";
  EXPECT_NE(err.find(file), std::string::npos) << err;
  EXPECT_NE(err.find("plugin 'misspelt-tolerance'"), std::string::npos) << err;
  EXPECT_NE(err.find("case op/fixture/conv1d/f32/contiguous/forward"), std::string::npos) << err;
  EXPECT_NE(err.find("tolerance family 'convolution'"), std::string::npos) << err;
  EXPECT_NE(err.find("conv, matmul"), std::string::npos) << err;  // the families it could have meant
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  // Refused whole: not even its good case is registered.
  EXPECT_TRUE(host.workloads().empty());
  EXPECT_TRUE(host.plugins().empty());
}

TEST(PluginHost, NonElfFileIsRefusedWithASentence) {
  const fs::path dir = fs::temp_directory_path() / "mpscheck-test-nonelf";
  fs::create_directories(dir);
  const fs::path file = dir / "garbage.so";
  std::ofstream(file) << "this is not a shared library";
  const std::string err = load_error(file.string());
  EXPECT_NE(err.find("not a loadable shared library"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(PluginHost, BadFilesInAFolderAreSkippedAndTheRestLoads) {
  const fs::path dir = fs::temp_directory_path() / "mpscheck-test-mixed";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kTestPlugins + "/mpscheck_faults.so", dir / "mpscheck_faults.so");
  fs::copy_file(kFixtures + "/fixture_not_a_plugin/fixture_not_a_plugin.so", dir / "a_not_a_plugin.so");
  fs::copy_file(kFixtures + "/fixture_wrong_api/fixture_wrong_api.so", dir / "b_wrong_api.so");
  std::ofstream(dir / "README.txt") << "ignored: not a library name";
  PluginHost host;
  host.load_directory(dir);
  EXPECT_EQ(host.plugins().size(), 1u);
  EXPECT_EQ(host.warnings().size(), 2u);
  EXPECT_EQ(ids_of(host), kFaultIds);
  fs::remove_all(dir);
}

TEST(PluginHost, MissingFolderIsAnError) {
  PluginHost host;
  EXPECT_THROW(host.load_directory("/no/such/folder"), PluginLoadError);
}

TEST(Registry, DuplicateIdsNameBothPlugins) {
  PluginHost host;
  host.load_directory(kTestPlugins);
  host.load_file(kFixtures + "/fixture_duplicate_ids/fixture_duplicate_ids.so");
  try {
    Registry registry(host.workloads());
    FAIL() << "duplicate ids accepted";
  } catch (const DuplicateCaseId& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("mpscheck_faults.so"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fixture_duplicate_ids.so"), std::string::npos) << msg;
  }
}

TEST(Registry, SelectsByKindFilterAndLargeTag) {
  PluginHost host;
  host.load_directory(kTestPlugins);
  const Registry registry(host.workloads());
  Selection s;
  s.ops = true;
  s.filters = {"faults/(h|s)", "-hang"};
  std::vector<std::string> ids;
  for (const auto& w : registry.select(s)) ids.push_back(w.workload->id());
  EXPECT_EQ(ids, (std::vector<std::string>{"op/faults/healthy", "op/faults/segfault", "op/faults/slow",
                                           "op/faults/stalled_reference"}));
  s.ops = false;
  s.models = true;
  EXPECT_TRUE(registry.select(s).empty());
}

namespace {
// A copy of the faults plugin in a folder of its own, to change its mode and owner.
std::string private_copy(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("mpscheck-trust-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);
  fs::copy_file(kTestPlugins + "/mpscheck_faults.so", dir / "mpscheck_faults.so");
  fs::permissions(dir / "mpscheck_faults.so", fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  return dir.string();
}

std::string trust_error(const std::string& dir) {
  PluginHost host;
  try {
    host.load_directory(dir);
  } catch (const UntrustedPlugin& e) {
    return e.what();
  }
  return {};
}
}  // namespace

TEST(PluginTrust, OwnFilesInAPrivateFolderLoad) {
  const std::string dir = private_copy("own");
  EXPECT_EQ(trust_error(dir), "");
  fs::remove_all(dir);
}

TEST(PluginTrust, AWorldWritablePluginIsRefusedNamingTheFileAndTheFix) {
  const std::string dir = private_copy("world-file");
  fs::permissions(dir + "/mpscheck_faults.so", fs::perms::others_write, fs::perm_options::add);
  const std::string e = trust_error(dir);
  EXPECT_NE(e.find(dir + "/mpscheck_faults.so"), std::string::npos) << e;
  EXPECT_NE(e.find("world-writable"), std::string::npos) << e;
  EXPECT_NE(e.find("chmod o-w"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(PluginTrust, AWorldWritableFolderIsRefused) {
  const std::string dir = private_copy("world-dir");
  fs::permissions(dir, fs::perms::others_write, fs::perm_options::add);
  const std::string e = trust_error(dir);
  EXPECT_NE(e.find("plugin folder " + dir), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(PluginTrust, AFileOwnedBySomeoneElseIsRefused) {
  const std::string dir = private_copy("foreign");
  // Giving a file away needs root, as CI runs.
  ASSERT_EQ(chown((dir + "/mpscheck_faults.so").c_str(), 65534, 65534), 0) << "run as root";  // nobody
  const std::string e = trust_error(dir);
  EXPECT_NE(e.find("belongs to"), std::string::npos) << e;
  EXPECT_NE(e.find("chown"), std::string::npos) << e;
  // Root's own files are trusted: the same file given back to root loads.
  ASSERT_EQ(chown((dir + "/mpscheck_faults.so").c_str(), 0, 0), 0);
  EXPECT_EQ(trust_error(dir), "");
  fs::remove_all(dir);
}
