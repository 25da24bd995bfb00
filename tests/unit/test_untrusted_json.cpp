// util/untrusted_json.hpp walks JSON from outside for integer fields that do not fit; which fields
// are integers is the caller's knowledge (checks/result_json.hpp holds mpscheck's), not util's.
#include "checks/result_json.hpp"
#include "util/untrusted_json.hpp"

#include <gtest/gtest.h>

using namespace mpscheck;

namespace {
double count_is_integer(const std::string& key) { return key == "count" ? 1000.0 : 0.0; }
double no_integers(const std::string&) { return 0.0; }
}  // namespace

TEST(UntrustedJson, NamesTheFirstFieldOverTheCallersLimitAtAnyDepth) {
  EXPECT_EQ(bad_integer_field(nlohmann::json::parse(R"({"count": 999.0})"), count_is_integer), "");
  EXPECT_EQ(bad_integer_field(nlohmann::json::parse(R"({"count": 1000.0})"), count_is_integer), "count");
  EXPECT_EQ(bad_integer_field(nlohmann::json::parse(R"({"a": [{"b": {"count": -1e300}}]})"), count_is_integer),
            "count");
  EXPECT_EQ(bad_integer_field(nlohmann::json::parse(R"({"count": [1.0, 2e9]})"), count_is_integer), "count");
  // An integer nlohmann has already read as one always fits; so does a float in a field that is no integer.
  EXPECT_EQ(bad_integer_field(nlohmann::json::parse(R"({"count": 5000, "other": 1e300})"), count_is_integer), "");
}

TEST(UntrustedJson, KnowsNoFieldNamesOfItsOwn) {
  // mpscheck's integer fields are not util's: with a table that has none, nothing is refused.
  EXPECT_EQ(bad_integer_field(nlohmann::json::parse(R"({"runs": 1e300, "seed": 1e300})"), no_integers), "");
}

TEST(UntrustedJson, TheResultModelsTableCoversResultsAndTheirDocumentsHeaders) {
  EXPECT_EQ(bad_result_integer_field(nlohmann::json::parse(R"({"cases": [{"runs": 1e300}]})")), "runs");
  EXPECT_EQ(bad_result_integer_field(nlohmann::json::parse(R"({"cases": [{"runs": 3.0e9}]})")), "runs");  // over int
  EXPECT_EQ(bad_result_integer_field(nlohmann::json::parse(R"({"schema_version": 1e19})")), "schema_version");
  EXPECT_EQ(bad_result_integer_field(nlohmann::json::parse(R"({"mpscheck_journal": 1, "seed": 7})")), "");
  EXPECT_EQ(bad_result_integer_field(nlohmann::json::parse(R"({"outputs": [{"shape": [2.0, 1e300]}]})")), "shape");
}
