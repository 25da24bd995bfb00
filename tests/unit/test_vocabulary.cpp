// The result vocabulary: each enum has one name table, every value survives JSON, and a word
// no table holds is refused rather than read as some default.
#include "checks/result.hpp"

#include "core/target.hpp"
#include "reports/report.hpp"

#include <mpscheck/dtype_names.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

using namespace mpscheck;

namespace {
template <typename E, typename Parse>
void expect_round_trip(int count, Parse parse) {
  for (int i = 0; i < count; ++i) {
    const E e = static_cast<E>(i);
    EXPECT_EQ(parse(to_string(e)), e) << to_string(e);
  }
}
}  // namespace

TEST(Vocabulary, EveryNameParsesBackToItsValue) {
  expect_round_trip<Kind>(2, kind_from_string);
  expect_round_trip<CaseKind>(3, case_kind_from_string);
  // A result's kind spells a workload's kind the same way; only the host's probe is its own.
  EXPECT_STREQ(to_string(case_kind(Kind::Model)), to_string(Kind::Model));
  EXPECT_STREQ(to_string(case_kind(Kind::Op)), to_string(Kind::Op));
  EXPECT_THROW(kind_from_string("probe"), std::invalid_argument);  // no workload is a probe
  expect_round_trip<Status>(10, status_from_string);
  expect_round_trip<SpeedClass>(4, speed_class_from_string);
  expect_round_trip<Recommendation>(5, recommendation_from_string);
  EXPECT_STREQ(to_string(Status::Fallback), "fallback");
  EXPECT_STREQ(to_string(Recommendation::KeepOnCpu), "keep on CPU");
  EXPECT_STREQ(to_string(SpeedClass::None), "");
}

TEST(Vocabulary, UnknownWordsAreRefusedByName) {
  EXPECT_THROW(kind_from_string("tensor"), std::invalid_argument);
  EXPECT_THROW(status_from_string("passed"), std::invalid_argument);
  EXPECT_THROW(speed_class_from_string("Faster"), std::invalid_argument);
  EXPECT_THROW(recommendation_from_string("keep on cpu"), std::invalid_argument);
  try {
    kind_from_string("tensor");
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown kind 'tensor'");
  }
}

TEST(Vocabulary, CaseResultKeepsItsWordsThroughJson) {
  CaseResult r;
  r.id = "model/vae/train";
  r.kind = CaseKind::Model;
  r.status = Status::Pass;
  r.speed_class = SpeedClass::Slower;
  r.recommendation = Recommendation::KeepOnCpu;
  const nlohmann::json j = r;
  EXPECT_EQ(j.at("kind"), "model");
  EXPECT_EQ(j.at("speed_class"), "slower");
  EXPECT_EQ(j.at("recommendation"), "keep on CPU");
  const CaseResult back = j.get<CaseResult>();
  EXPECT_EQ(back.kind, CaseKind::Model);
  EXPECT_EQ(back.speed_class, SpeedClass::Slower);
  EXPECT_EQ(back.recommendation, Recommendation::KeepOnCpu);

  nlohmann::json bad = j;
  bad["speed_class"] = "much faster";
  EXPECT_THROW(bad.get<CaseResult>(), std::invalid_argument);
  bad = j;
  bad["kind"] = "layer";
  EXPECT_THROW(bad.get<CaseResult>(), std::invalid_argument);
}

// The judge's own words, a rule and a fragile side, are enums too: written by their names as the
// strings were before (no "rule" key for the plain tolerance, an empty attribution for none), read
// back by them, and an unknown one refused.
TEST(Vocabulary, RuleAndFragileSideKeepTheirWordsThroughJson) {
  auto rule = [](const std::string& s) { return names::parse<Rule>(names::kRule, s, "rule"); };
  auto fragile = [](const std::string& s) { return names::parse<Fragile>(names::kFragile, s, "attribution"); };
  expect_round_trip<Rule>(5, rule);
  expect_round_trip<Fragile>(4, fragile);
  CaseResult r;
  r.id = "op/binary/eq/i64/contiguous/forward";
  r.attribution = Fragile::Float32;
  OutputReport o;
  o.name = "out";
  o.rule = Rule::Exact;
  o.dtype_differs = true;
  r.outputs.push_back(o);
  OutputReport plain;
  plain.name = "plain";
  r.outputs.push_back(plain);
  const nlohmann::json j = r;
  EXPECT_EQ(j.at("attribution"), "float32");
  EXPECT_EQ(j.at("outputs").at(0).at("rule"), "exact");
  EXPECT_FALSE(j.at("outputs").at(1).contains("rule"));
  EXPECT_FALSE(j.at("outputs").at(0).contains("dtype_differs"));  // the judge's flag, not the report's
  const CaseResult back = j.get<CaseResult>();
  EXPECT_EQ(back.attribution, Fragile::Float32);
  EXPECT_EQ(back.outputs.at(0).rule, Rule::Exact);
  EXPECT_EQ(back.outputs.at(1).rule, Rule::Tolerance);
  nlohmann::json bad = j;
  bad["outputs"][0]["rule"] = "approximate";
  EXPECT_THROW(bad.get<CaseResult>(), std::invalid_argument);
  bad = j;
  bad["attribution"] = "reference";
  EXPECT_THROW(bad.get<CaseResult>(), std::invalid_argument);
}

// Reading a report back goes through the same tables: a word none of them holds makes the file
// refused, naming the file and the word, rather than read as "not timed" or "op".
TEST(Vocabulary, AReportWithAnUnknownWordIsRefusedNamingTheFile) {
  namespace fs = std::filesystem;
  CaseResult r;
  r.id = "op/unary/abs/f32/contiguous/forward";
  r.status = Status::Pass;
  r.speed_class = SpeedClass::Faster;
  r.recommendation = Recommendation::Accelerate;
  RunReport report;
  report.cases = {r};
  const fs::path path = fs::temp_directory_path() / ("mpscheck-vocabulary-" + std::to_string(::getpid()) + ".json");
  for (const auto& [field, word] :
       {std::pair{"speed_class", "quicker"}, {"recommendation", "speed up"}, {"kind", "layer"}}) {
    nlohmann::json j = report_to_json(report);
    j["cases"][0][field] = word;
    std::ofstream(path) << j.dump();
    try {
      (void)read_json_report(path.string());
      ADD_FAILURE() << field << " '" << word << "' was accepted";
    } catch (const ReportError& e) {
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  }
  write_json_report(path.string(), report);
  EXPECT_EQ(read_json_report(path.string()).cases.at(0).speed_class, SpeedClass::Faster);
  fs::remove(path);
}

// One dtype table: every spelling a user types reads back as its dtype, every form is derived from
// the one name, and no word names two dtypes (a second table drifting from it would show here).
TEST(DtypeNames, EverySpellingReadsBackAndNoWordNamesTwoDtypes) {
  std::map<std::string, c10::ScalarType> seen;
  for (const DtypeSpelling& d : kDtypeSpellings) {
    EXPECT_EQ(dtype_name(d.type), d.name);
    EXPECT_EQ(dtype_id(d.type), d.id);
    EXPECT_EQ(dtype_python(d.type), std::string("torch.") + d.name);
    for (const char* word : {d.name, d.id, d.alias}) {
      if (!word) continue;
      EXPECT_EQ(dtype_from_word(word), d.type) << word;
      const auto [it, fresh] = seen.emplace(word, d.type);
      EXPECT_TRUE(fresh || it->second == d.type) << word << " names two dtypes";
    }
  }
  EXPECT_FALSE(dtype_from_word("BFloat16").has_value());  // c10's spelling is no word a user types
  EXPECT_FALSE(dtype_from_word("").has_value());
  EXPECT_EQ(dtype_name(c10::kComplexFloat), "ComplexFloat");  // outside the table: c10's name, nothing invented
}

// --target reads the same table: each spelling of the three compute dtypes, the same text back.
TEST(DtypeNames, TargetsParseEverySpellingAndPrintTheName) {
  for (const char* word : {"bfloat16", "bf16"})
    EXPECT_EQ(parse_target(std::string("sim:") + word).str(), "sim:bfloat16");
  for (const char* word : {"float16", "f16", "half"})
    EXPECT_EQ(parse_target(std::string("cpu:") + word).str(), "cpu:float16");
  for (const char* word : {"float32", "f32", "float"}) EXPECT_EQ(parse_target(std::string("cpu:") + word).str(), "cpu");
  try {
    (void)parse_target("cpu:int8");
    ADD_FAILURE() << "cpu:int8 accepted";
  } catch (const BadTarget& e) {
    EXPECT_NE(std::string(e.what()).find("unknown dtype 'int8' in --target cpu:int8"), std::string::npos) << e.what();
  }
}
