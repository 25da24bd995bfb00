// The rule book (issue 47 item 5): every number that decides a verdict is in checks/rule_book.cpp's
// table, and docs/verdicts.md holds that table exactly. A number added to checks/ without a row, or
// a page left behind after a number changed, fails here.
#include "checks/rule_book.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Named constants in checks/ that decide no verdict, each with why: the comparison's and the
// timing's mechanics, not thresholds of a rule.
const std::set<std::string> kNotVerdictNumbers = {
    "kBinOffset",
    "kBins",  // binade indexing of magnitudes (attribution.cpp, structure.cpp)
    "kBlock",
    "kChunk",  // how many elements are read at a time
    "kLanes",
    "kShrink",
    "kTiny",
    "kMax",
    "kInf",
    "kKinds",  // arithmetic devices of the fast pass and the structure test
    "kMinSamples",
    "kMaxSamples",
    "kMaxCrowded",
    "kComputingThreadShare",
    "kConfirmationBudgetShare",  // how long a timing round runs, and which threads count (docs/timing.md)
    "kMinEffect",                // timing.cpp's local name for kMinSpeedEffect
};

}  // namespace

TEST(RuleBook, EveryNumberOfTheChecksHasARowWithAReason) {
  std::set<std::string> named;
  for (const auto& r : mpscheck::rule_book()) {
    EXPECT_TRUE(named.insert(r.name).second) << "twice in the rule book: " << r.name;
    EXPECT_FALSE(r.reason.empty()) << r.name << " has no reason";
    EXPECT_TRUE(std::isfinite(r.value) && r.value >= 0) << r.name << " = " << r.value;
  }
  // Every `constexpr <number type> kName = ...` of checks/ (a comma list names several).
  const std::regex declaration(R"(constexpr\s+(?:double|float|int|unsigned|long|std::int64_t|std::size_t)\s+([^;]*);)");
  const std::regex name(R"(\b(k[A-Z][A-Za-z0-9]*)\s*=)");
  int found = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(MPSCHECK_SOURCE_DIR) + "/checks")) {
    const std::string text = read_file(entry.path());
    for (std::sregex_iterator d(text.begin(), text.end(), declaration), end; d != end; ++d) {
      const std::string list = (*d)[1];
      for (std::sregex_iterator n(list.begin(), list.end(), name); n != end; ++n) {
        const std::string k = (*n)[1];
        ++found;
        if (kNotVerdictNumbers.count(k)) continue;
        EXPECT_TRUE(named.count(k)) << entry.path().filename().string() << " declares " << k
                                    << ", which is in neither checks/rule_book.cpp nor this test's list of "
                                       "constants that decide no verdict";
      }
    }
  }
  EXPECT_GT(found, 30) << "the scan of checks/ found too few constants to be reading the files";
  // kStructure's fields are read by name: one row each (structure.hpp's StructureRules).
  const std::string structure = read_file(std::string(MPSCHECK_SOURCE_DIR) + "/checks/structure.hpp");
  const std::regex field(R"(\n\s+\.([a-z_]+)\s*=)");
  int fields = 0;
  for (std::sregex_iterator f(structure.begin(), structure.end(), field), end; f != end; ++f, ++fields)
    EXPECT_TRUE(named.count("kStructure." + std::string((*f)[1]))) << "kStructure." << (*f)[1] << " has no row";
  EXPECT_GE(fields, 10);
}

TEST(RuleBook, TheVerdictsPageHoldsTheTableAsTheCodeHasIt) {
  const std::string page = read_file(std::string(MPSCHECK_SOURCE_DIR) + "/docs/verdicts.md");
  const std::string open =
      "<!-- rule-book: written from checks/rule_book.cpp, kept equal by tests/unit/test_rule_book.cpp -->\n";
  const std::string close = "<!-- /rule-book -->";
  const size_t begin = page.find(open), end = page.find(close);
  ASSERT_NE(begin, std::string::npos) << "docs/verdicts.md has no rule-book block; it opens with:\n" << open;
  ASSERT_NE(end, std::string::npos) << "docs/verdicts.md's rule-book block is not closed with " << close;
  const std::string on_page = page.substr(begin + open.size(), end - begin - open.size());
  const std::string table = mpscheck::rule_book_markdown();
  if (on_page != table) {
    const auto written = std::filesystem::current_path() / "rule-book.md";
    std::ofstream(written) << table;
    ADD_FAILURE() << "docs/verdicts.md's rule book differs from checks/rule_book.cpp's: replace the block's "
                     "table with "
                  << written.string();
  }
}
