// Findings grouped by op: one op's dtype x layout x direction variants sit together in the console,
// with the worst group first (the flat list scattered one op over dozens of rows).
#include "reports/console.hpp"
#include "reports/writers.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace mpscheck;

namespace {
CaseResult with(const std::string& id, Status s) {
  CaseResult c;
  c.id = id;
  c.status = s;
  c.message = s == Status::Pass ? "" : "why " + id;
  return c;
}
}  // namespace

TEST(FindingsByOp, GroupsEveryCaseOfAnOpIntoOneMatrix) {
  RunReport r;
  r.cases = {with("op/activation/sigmoid/bf16/contiguous/backward", Status::Mismatch),
             with("op/binary/add/f32/contiguous/forward", Status::Crash),
             with("op/activation/sigmoid/bf16/contiguous/forward", Status::Pass),
             with("op/activation/sigmoid/f16/sliced/backward", Status::Mismatch),
             with("op/activation/sigmoid/f32/transposed/forward", Status::Pass),
             with("model/vae/train", Status::Nan),
             with("model/vae/infer", Status::Pass),
             with("op/faults/wrong", Status::Mismatch),
             with("op/binary/mul/f32/contiguous/forward", Status::Pass)};
  const auto groups = findings_by_op(r);
  ASSERT_EQ(groups.size(), 4u);                       // mul has no finding: no group
  EXPECT_EQ(groups[0].key, "op/binary/add");          // crash: the worst
  EXPECT_EQ(groups[1].key, "model/vae");              // nan
  EXPECT_EQ(groups[2].key, "op/activation/sigmoid");  // two mismatches before one
  EXPECT_EQ(groups[3].key, "op/faults/wrong");
  const OpGroup& sigmoid = groups[2];
  EXPECT_EQ(sigmoid.cases, 4);
  EXPECT_EQ(sigmoid.findings.size(), 2u);
  EXPECT_EQ(sigmoid.rows, (std::vector<std::string>{"bf16", "f16", "f32"}));
  EXPECT_EQ(sigmoid.columns, (std::vector<std::string>{"contiguous/backward", "contiguous/forward", "sliced/backward",
                                                       "transposed/forward"}));
  EXPECT_EQ(sigmoid.cells.at({"f32", "transposed/forward"})->status, Status::Pass);
  EXPECT_FALSE(sigmoid.cells.count({"f16", "contiguous/forward"}));
  EXPECT_EQ(groups[1].rows, std::vector<std::string>{"model"});
  EXPECT_EQ(groups[1].columns, (std::vector<std::string>{"train", "infer"}));

  std::ostringstream out;
  ConsoleReporter(out, false, false).summary(r, "r.json");
  const std::string text = out.str();
  const auto head = text.find("  mismatch    op/activation/sigmoid (2 of 4 cases)\n");
  ASSERT_NE(head, std::string::npos) << text;
  // Both sigmoid findings follow their group line, before the next group.
  const auto a = text.find("    mismatch    op/activation/sigmoid/bf16/contiguous/backward", head);
  const auto b = text.find("    mismatch    op/activation/sigmoid/f16/sliced/backward", head);
  const auto next = text.find("op/faults/wrong (1 of 1 case)", head);
  EXPECT_LT(a, next);
  EXPECT_LT(b, next);
  EXPECT_LT(text.find("op/binary/add (1 of 1 case)"), head);
}
