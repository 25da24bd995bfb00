#include "core/journal.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fcntl.h>

using namespace mpscheck;
namespace fs = std::filesystem;

namespace {
CaseResult result(const std::string& id, Status s) {
  CaseResult r;
  r.id = id;
  r.kind = CaseKind::Op;
  r.status = s;
  r.message = "m";
  return r;
}
}  // namespace

TEST(Journal, RoundTripsEveryResultAfterItsHeader) {
  const std::string path = (fs::temp_directory_path() / "mpscheck-journal-test.jsonl").string();
  {
    Journal j(path, {{"mpscheck_journal", 1}, {"target", "cpu"}}, false);
    j.append(result("a", Status::Pass));
    j.append(result("b", Status::Crash));
  }
  const auto c = read_journal(path);
  EXPECT_EQ(c.header["target"], "cpu");
  ASSERT_EQ(c.results.size(), 2u);
  EXPECT_EQ(c.results[1].id, "b");
  EXPECT_EQ(c.results[1].status, Status::Crash);
  fs::remove(path);
}

TEST(Journal, AHalfWrittenLastLineIsSkippedAndResumeAppends) {
  const std::string path = (fs::temp_directory_path() / "mpscheck-journal-torn.jsonl").string();
  {
    Journal j(path, {{"mpscheck_journal", 1}}, false);
    j.append(result("a", Status::Pass));
  }
  std::ofstream(path, std::ios::app) << "{\"id\": \"b\", \"sta";  // killed mid-write
  {
    Journal j(path, {}, true);
    j.append(result("c", Status::Mismatch));
  }
  const auto c = read_journal(path);
  ASSERT_EQ(c.results.size(), 2u);
  EXPECT_EQ(c.results[0].id, "a");
  EXPECT_EQ(c.results[1].id, "c");
  EXPECT_EQ(c.damaged_lines, 1);
  fs::remove(path);
}

TEST(Journal, MissingOrForeignFilesAreErrors) {
  EXPECT_THROW(read_journal("/no/such/journal.jsonl"), JournalError);
  const std::string path = (fs::temp_directory_path() / "mpscheck-not-a-journal.jsonl").string();
  std::ofstream(path) << "{\"hello\": 1}\n";
  EXPECT_THROW(read_journal(path), JournalError);
  fs::remove(path);
}

TEST(ResultJson, NonFiniteErrorsSurviveARoundTrip) {
  CaseResult r = result("x", Status::Nan);
  OutputReport o;
  o.name = "out";
  o.max_abs = std::numeric_limits<double>::infinity();
  r.outputs.push_back(o);
  const CaseResult back = nlohmann::json(r).get<CaseResult>();
  EXPECT_TRUE(std::isinf(back.outputs.at(0).max_abs));
  EXPECT_EQ(back.status, Status::Nan);
}

TEST(Journal, DamagedLinesAreCountedNotFatal) {
  const std::string text =
      "{\"mpscheck_journal\":1,\"target\":\"cpu\"}\n"
      "{\"id\":\"a\",\"status\":\"pass\"}\n"
      "{\"id\":\"b\",\"status\":\"no-such-status\"}\n"  // unknown status
      "[1,2,3]\n"                                       // not an object
      "{\"id\":\"c\",\"status\":\"crash\"}\n"
      "{\"id\":\"d\",\"sta";  // torn by a kill
  const auto c = parse_journal(text, "j.jsonl");
  ASSERT_EQ(c.results.size(), 2u);
  EXPECT_EQ(c.results[1].id, "c");
  EXPECT_EQ(c.damaged_lines, 3);
}

TEST(Journal, AFailedWriteThrowsNamingTheFileAndKeepsEveryEarlierLineWhole) {
  // /dev/full: every write fails with ENOSPC, like a full disk.
  EXPECT_THROW(Journal("/dev/full", {{"mpscheck_journal", 1}}, true), JournalError);
  try {
    Journal j("/dev/full", {{"mpscheck_journal", 1}}, true);
  } catch (const JournalError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos) << e.what();
  }
}

TEST(Journal, ItsDescriptorIsCloseOnExec) {
  const std::string path = (fs::temp_directory_path() / "mpscheck-journal-cloexec.jsonl").string();
  Journal j(path, {{"mpscheck_journal", 1}}, false);
  // Every descriptor that points at the journal must be close-on-exec, or workers inherit it.
  int found = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(e.path(), ec) != fs::path(path)) continue;
    ++found;
    const int fd = std::stoi(e.path().filename().string());
    EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC) << "fd " << fd;
  }
  EXPECT_EQ(found, 1);
  fs::remove(path);
}
