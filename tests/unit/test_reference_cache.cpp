// --reference-cache: an entry comes back exactly as stored, and only for exactly its key; a torn,
// corrupt or foreign file is never used.
#include "core/reference_cache.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <unistd.h>
#include <fstream>

using namespace mpscheck;
namespace fs = std::filesystem;

namespace {

std::string scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("mpscheck-refcache-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

CacheKey key() {
  CacheKey k;
  k.torch = "2.13.0 build 0123456789abcdef";
  k.cpu = "Test CPU";
  k.threads = 2;
  k.seed = 7;
  k.quick = true;
  k.plugin = "ops_activation";
  k.plugin_version = "1.0";
  k.case_id = "op/activation/gelu/f32/contiguous/forward";
  return k;
}

CachedReference entry() {
  CachedReference e;
  e.outputs.push_back({"out", at::arange(12, at::kFloat).reshape({3, 4}).t()});  // not contiguous
  e.outputs.push_back({"idx", at::tensor({3, 1, 2}, at::kLong)});
  e.outputs.push_back({"flag", at::tensor({1, 0}, at::kInt).to(at::kBool)});
  Output stat{"mean", at::tensor({0.3}, at::kDouble)};
  stat.standard_error = at::tensor({0.01}, at::kDouble);
  e.outputs.push_back(stat);
  e.determinism_checked = true;
  e.rerun["out"] = at::arange(12, at::kFloat).reshape({3, 4}).t() + 1.5e-7;
  e.gold["out"] = at::arange(12, at::kDouble).reshape({3, 4}).t();
  e.reference_time = TimingStats{1e-3, 0.9e-3, 1.2e-3, 9};
  e.reference_time_budget = 0.02;
  return e;
}

void flip_byte(const std::string& path, std::streamoff from_end) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-from_end, std::ios::end);
  char c;
  f.get(c);
  f.seekp(-from_end, std::ios::end);
  f.put(static_cast<char>(c ^ 0x5a));
}

}  // namespace

TEST(ReferenceCache, AnEntryComesBackExactlyAsStored) {
  const ReferenceCache cache(scratch("roundtrip"));
  ASSERT_TRUE(cache.store(key(), entry()));
  const auto back = cache.load(key());
  ASSERT_TRUE(back.has_value());
  const CachedReference e = entry();
  ASSERT_EQ(back->outputs.size(), e.outputs.size());
  for (size_t i = 0; i < e.outputs.size(); ++i) {
    EXPECT_EQ(back->outputs[i].name, e.outputs[i].name);
    EXPECT_EQ(back->outputs[i].value.scalar_type(), e.outputs[i].value.scalar_type());
    EXPECT_TRUE(at::equal(back->outputs[i].value, e.outputs[i].value)) << e.outputs[i].name;
    EXPECT_EQ(back->outputs[i].standard_error.defined(), e.outputs[i].standard_error.defined());
  }
  EXPECT_TRUE(at::equal(back->outputs[3].standard_error, e.outputs[3].standard_error));
  EXPECT_TRUE(back->determinism_checked);
  ASSERT_EQ(back->rerun.count("out"), 1u);
  EXPECT_TRUE(at::equal(back->rerun.at("out"), e.rerun.at("out")));
  ASSERT_EQ(back->gold.count("out"), 1u);
  EXPECT_TRUE(at::equal(back->gold.at("out"), e.gold.at("out")));
  ASSERT_TRUE(back->reference_time.has_value());
  EXPECT_EQ(back->reference_time->median_s, 1e-3);
  EXPECT_EQ(back->reference_time->runs, 9);
  EXPECT_EQ(back->reference_time_budget, 0.02);
}

TEST(ReferenceCache, AnEntryIsNeverUsedForAnotherLibTorchCpuThreadsSeedQuickPluginOrCase) {
  const std::string dir = scratch("keys");
  const ReferenceCache cache(dir);
  ASSERT_TRUE(cache.store(key(), entry()));
  const std::vector<std::pair<std::string, std::function<void(CacheKey&)>>> changes{
      {"LibTorch version", [](CacheKey& k) { k.torch = "2.12.0 build 0123456789abcdef"; }},
      {"LibTorch build", [](CacheKey& k) { k.torch = "2.13.0 build fedcba9876543210"; }},
      {"CPU", [](CacheKey& k) { k.cpu = "Other CPU"; }},
      {"threads", [](CacheKey& k) { k.threads = 1; }},
      {"seed", [](CacheKey& k) { k.seed = 8; }},
      {"quick", [](CacheKey& k) { k.quick = false; }},
      {"plugin", [](CacheKey& k) { k.plugin = "ops_other"; }},
      {"plugin version", [](CacheKey& k) { k.plugin_version = "1.1"; }},
      {"case", [](CacheKey& k) { k.case_id = "op/activation/gelu/f32/sliced/forward"; }},
  };
  for (const auto& [what, change] : changes) {
    CacheKey other = key();
    change(other);
    EXPECT_FALSE(cache.load(other).has_value()) << what;
    // Even a file planted at the other key's own path (a digest collision, a copied folder) is
    // refused: the whole key inside it is compared.
    fs::copy_file(cache.path_for(key()), cache.path_for(other), fs::copy_options::overwrite_existing);
    std::string why;
    EXPECT_FALSE(cache.load(other, &why).has_value()) << what;
    EXPECT_NE(why.find("another key"), std::string::npos) << what << ": " << why;
    fs::remove(cache.path_for(other));
  }
  EXPECT_TRUE(cache.load(key()).has_value());
}

TEST(ReferenceCache, ATornCorruptOrForeignFileIsRecomputedNotTrusted) {
  const std::string dir = scratch("damage");
  const ReferenceCache cache(dir);
  const std::string path = cache.path_for(key());
  std::string why;

  ASSERT_TRUE(cache.store(key(), entry()));
  flip_byte(path, 40);  // inside the payload: one element's bits
  EXPECT_FALSE(cache.load(key(), &why).has_value());
  EXPECT_NE(why.find("checksum"), std::string::npos) << why;

  ASSERT_TRUE(cache.store(key(), entry()));
  fs::resize_file(path, fs::file_size(path) - 3);  // torn at the end
  EXPECT_FALSE(cache.load(key(), &why).has_value()) << why;

  ASSERT_TRUE(cache.store(key(), entry()));
  std::ofstream(path, std::ios::app) << "x";  // trailing bytes
  EXPECT_FALSE(cache.load(key(), &why).has_value()) << why;

  std::ofstream(path, std::ios::trunc) << "not a cache entry at all";
  EXPECT_FALSE(cache.load(key(), &why).has_value());
  EXPECT_NE(why.find("not a reference cache entry"), std::string::npos) << why;

  // Replaced whole by the next store.
  ASSERT_TRUE(cache.store(key(), entry()));
  EXPECT_TRUE(cache.load(key()).has_value());
}

TEST(ReferenceCache, AnUnwritableFolderLeavesTheRunWithoutACacheNotBroken) {
  const std::string dir = scratch("readonly");
  const std::string file = dir + "/a-file";
  std::ofstream(file) << "x";
  const ReferenceCache cache(file + "/below-a-file");
  EXPECT_FALSE(cache.store(key(), entry()));
  EXPECT_FALSE(cache.load(key()).has_value());
}
