// Host text on its way into JSON (issue 23 item 6): repaired everywhere in a JSON value, or refused
// in one UTF-8 line.
#include "core/host_text.hpp"

#include <gtest/gtest.h>

using namespace mpscheck;

namespace {
const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD
}

TEST(HostText, EveryStringAndKeyOfAJsonValueIsRepaired) {
  const nlohmann::json raw = {{"command", "mpscheck --report-dir /tmp/r\xE9sultats"},
                              {"variables", {{"PYTORCH_\xFF", "caf\xE9"}}},
                              {"filters", {"ok", "\xC3"}},
                              {"seed", 7}};
  EXPECT_THROW(raw.dump(), nlohmann::json::type_error);  // what aborted the host
  const nlohmann::json j = valid_utf8_json(raw);
  EXPECT_EQ(j["command"], "mpscheck --report-dir /tmp/r" + kReplacement + "sultats");
  EXPECT_EQ(j["variables"]["PYTORCH_" + kReplacement], "caf" + kReplacement);
  EXPECT_EQ(j["filters"], nlohmann::json({"ok", kReplacement}));
  EXPECT_EQ(j["seed"], 7);
  EXPECT_NO_THROW(j.dump());
  // Valid text, multi-byte included, is kept as it is.
  EXPECT_EQ(valid_utf8_json("caf\xC3\xA9 \xE2\x82\xAC"), "caf\xC3\xA9 \xE2\x82\xAC");
}

TEST(HostText, ARefusalIsOneUtf8LineAndValidTextIsNotRefused) {
  EXPECT_FALSE(not_utf8("--model", "caf\xC3\xA9.pt").has_value());
  EXPECT_FALSE(not_utf8("--model", "line\nbreak.pt").has_value());  // odd but valid: the worker gets it intact
  const auto refusal = not_utf8("--model", "m\xE9\n.pt");           // found by tests/fuzz/fuzz_host_text
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->find('\n'), std::string::npos) << *refusal;
  EXPECT_EQ(refusal->rfind("--model 'm" + kReplacement + kReplacement + ".pt' is not valid UTF-8", 0), 0u) << *refusal;
  EXPECT_NO_THROW(nlohmann::json(*refusal).dump());
}
