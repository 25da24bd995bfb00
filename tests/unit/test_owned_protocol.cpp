// The worker's phase lines and the result's `phase` field (issue 23 item 5): a phase line is read
// as a phase and never as a result, an unknown phase is a protocol error, only "target" (or no
// phase at all) charges a crash to the target, and the JSON field is additive.
#include "core/worker_protocol.hpp"

#include <gtest/gtest.h>

using namespace mpscheck;

TEST(OwnedPhaseProtocol, APhaseLineRoundTripsAndAResultLineIsNotAPhase) {
  for (const char* p : {"reference", "target", "comparison", "float64", "localisation", "timing"})
    EXPECT_EQ(parse_phase_message(phase_message(p)), p);
  CaseResult r;
  r.id = "op/x";
  r.status = Status::Pass;
  EXPECT_EQ(parse_phase_message(nlohmann::json(r).dump()), "");
  // A result whose first key happened to be "phase" is still a result: it has more than one key.
  EXPECT_EQ(parse_phase_message(R"({"phase":"target","id":"op/x","status":"pass"})"), "");
  EXPECT_THROW(parse_phase_message(R"({"phase":"lunch"})"), ProtocolError);
  EXPECT_EQ(parse_phase_message(R"({"phase":7})"), "");
}

TEST(OwnedPhaseProtocol, OnlyTheTargetPhaseIsTheTargets) {
  EXPECT_TRUE(phase_is_target("target"));
  EXPECT_TRUE(phase_is_target(""));  // no phase reported: as before phases existed
  for (const char* p : {"reference", "comparison", "float64", "localisation", "timing"})
    EXPECT_FALSE(phase_is_target(p));
}

TEST(OwnedPhaseProtocol, ThePhaseFieldIsAdditive) {
  CaseResult r;
  r.id = "op/x";
  r.status = Status::Error;
  r.phase = "float64";
  const nlohmann::json j = r;
  EXPECT_EQ(j.at("phase"), "float64");
  EXPECT_EQ(j.get<CaseResult>().phase, "float64");
  CaseResult clean;
  clean.id = "op/y";
  clean.status = Status::Pass;
  const nlohmann::json k = clean;
  EXPECT_FALSE(k.contains("phase"));  // a report without phases reads and writes as before
  EXPECT_EQ(k.get<CaseResult>().phase, "");
}
