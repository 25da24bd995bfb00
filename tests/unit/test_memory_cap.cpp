// Huge cases (core/memory_cap.hpp): the need a case declares, the decision against a device's and
// this machine's memory, and the selection that takes them only with --huge.
#include "core/memory_cap.hpp"
#include "core/registry.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace mpscheck;

namespace {

class TaggedCase final : public Workload {
 public:
  TaggedCase(std::string id, std::vector<std::string> tags) : id_(std::move(id)), tags_(std::move(tags)) {}
  std::string id() const override { return id_; }
  Kind kind() const override { return Kind::Op; }
  std::vector<std::string> tags() const override { return tags_; }
  std::unique_ptr<Instance> instantiate(const Setup&, const Placement&) const override { return nullptr; }

 private:
  std::string id_;
  std::vector<std::string> tags_;
};

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

}  // namespace

TEST(MemoryCap, TheNeedComesFromTheCasesTag) {
  EXPECT_EQ(declared_device_bytes(TaggedCase("a", {"huge", "device-bytes:2147553280"})), 2147553280);
  EXPECT_FALSE(declared_device_bytes(TaggedCase("b", {"large"})));
  for (const char* bad : {"device-bytes:", "device-bytes:2G", "device-bytes:-5", "device-bytes:0"}) {
    try {
      declared_device_bytes(TaggedCase("op/x/huge", {bad}));
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("case 'op/x/huge': tag '" + std::string(bad) + "'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(MemoryCap, ACaseThatDoesNotFitIsRefusedWithBothFigures) {
  EXPECT_EQ(memory_cap_reason(2 * kGiB, "sim", kGiB, 20 * kGiB, false),
            "not run: it needs about 2.00 GiB on sim, which recommends at most 1.00 GiB (a huge case runs only "
            "where it fits; run it on a device with more memory)");
  // The device holds it, this machine does not hold the reference's side (twice the need).
  EXPECT_EQ(memory_cap_reason(2 * kGiB, "sim", 8 * kGiB, 3 * kGiB, false),
            "not run: it needs about 4.00 GiB of this machine's memory (the CPU reference's side), and 3.00 GiB is "
            "available (a huge case runs only where it fits; free memory or run it on a larger machine)");
  // A CPU target's side is this machine's memory too.
  EXPECT_TRUE(memory_cap_reason(2 * kGiB, "cpu", std::nullopt, 5 * kGiB, true));
  EXPECT_FALSE(memory_cap_reason(2 * kGiB, "cpu", std::nullopt, 7 * kGiB, true));
  // Fits, or nothing to weigh it against.
  EXPECT_FALSE(memory_cap_reason(2 * kGiB, "sim", 8 * kGiB, 20 * kGiB, false));
  EXPECT_FALSE(memory_cap_reason(2 * kGiB, "mps", std::nullopt, std::nullopt, false));
}

TEST(MemoryCap, OnlyHugeSelectsHugeCases) {
  const TaggedCase small("op/a/x/f32/contiguous/forward", {});
  const TaggedCase large("op/a/y/f32/large/forward", {"large"});
  const TaggedCase huge("op/a/z/int8/huge/forward", {"huge", "device-bytes:100"});
  const PluginInfo* plugin = nullptr;
  const Registry registry({{&small, plugin}, {&large, plugin}, {&huge, plugin}});
  auto ids = [&](Selection s) {
    std::vector<std::string> out;
    for (const auto& w : registry.select(s)) out.push_back(w.workload->id());
    return out;
  };
  using Ids = std::vector<std::string>;
  EXPECT_EQ(ids({}), (Ids{small.id(), large.id()}));
  EXPECT_EQ(ids({false, false, {"huge"}}), Ids{}) << "a filter alone does not take a huge case";
  Selection quick;
  quick.skip_large = true;
  EXPECT_EQ(ids(quick), Ids{small.id()});
  Selection with_huge;
  with_huge.huge = true;
  with_huge.filters = {"huge"};
  EXPECT_EQ(ids(with_huge), Ids{huge.id()});
  with_huge.skip_large = true;  // --quick --huge: the huge cases still
  EXPECT_EQ(ids(with_huge), Ids{huge.id()});
}
