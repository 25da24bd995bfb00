// The memory rule (checks/memory.hpp) and memory figures in every report: a case over the device's
// recommended maximum, or one the device refused for want of memory, is a `memory` finding with
// its own recommendation; the figures survive JSON and reach CSV, Markdown, HTML and bug reports.
#include "checks/errors.hpp"
#include "checks/memory.hpp"
#include "checks/recommend.hpp"
#include "checks/result_json.hpp"
#include "core/device_memory.hpp"
#include "reports/reporter.hpp"
#include "reports/writers.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>
#include <unistd.h>

using namespace mpscheck;

namespace {

constexpr std::int64_t kMiB = 1 << 20;

CaseResult measured(Status status, std::int64_t peak, std::int64_t max) {
  CaseResult r;
  r.id = "model/resnet18/train";
  r.kind = CaseKind::Model;
  r.status = status;
  r.target = "sim";
  r.memory = MemoryFigures{peak, "counter", 2 * peak, 300 * kMiB, max};
  return r;
}

std::string render_csv_for_tests(const RunReport& report) {
  const Reporter* csv = nullptr;
  for (const Reporter* r : reporters())
    if (std::string(r->flag()) == "csv") csv = r;
  if (!csv) return {};
  const auto path = std::filesystem::temp_directory_path() / ("mpscheck-memory-" + std::to_string(::getpid()) + ".csv");
  std::ostringstream console;
  csv->write(ReportContext{report, "", nullptr, nullptr, console, false}, path.string());
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  return text;
}

}  // namespace

TEST(MemoryRule, APassOverTheRecommendedMaximumIsAMemoryFindingWithBothFigures) {
  CaseResult r = measured(Status::Pass, 2150 * kMiB, 1536 * kMiB);
  judge_memory(r);
  EXPECT_EQ(r.status, Status::Memory);
  EXPECT_TRUE(is_finding(r.status));
  EXPECT_NE(r.message.find("needs 2.10 GiB of the 1.50 GiB the device recommends"), std::string::npos) << r.message;
  recommend(r);
  EXPECT_EQ(r.recommendation, Recommendation::ReduceMemory);
  EXPECT_STREQ(to_string(r.recommendation), "reduce memory");
  EXPECT_NE(r.reason.find("smaller batch"), std::string::npos) << r.reason;
}

// A leak is a memory finding too, but no smaller batch cures it: told apart by its typed growth
// figure (not by its message), it is blocked, and the figure survives report.json.
TEST(MemoryRule, ALeakIsBlockedNotToldToReduceMemory) {
  CaseResult r;
  r.id = "op/linalg/matmul_batched/f32/contiguous/forward@a=64x16x32,b=64x32x16~repeat20";
  r.status = Status::Memory;
  r.message = "memory grows with repetition: RSS grew 40.0 MiB over 17 calls (2.35 MiB per call)";
  r.memory.emplace();
  r.memory->growth_per_call = 2464 * 1024;
  recommend(r);
  EXPECT_EQ(r.recommendation, Recommendation::Blocked);
  EXPECT_EQ(r.reason.find("smaller batch"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("grows by 2.41 MiB with every call"), std::string::npos) << r.reason;

  const CaseResult back = nlohmann::json(r).get<CaseResult>();
  ASSERT_TRUE(back.memory);
  EXPECT_EQ(back.memory->growth_per_call, 2464 * 1024);
  CaseResult again = back;
  recommend(again);
  EXPECT_EQ(again.recommendation, Recommendation::Blocked);

  // Without the figure (a case over the device's memory) the advice is the batch size, and the
  // figure is not written at all.
  r.memory->growth_per_call = -1;
  recommend(r);
  EXPECT_EQ(r.recommendation, Recommendation::ReduceMemory);
  EXPECT_FALSE(nlohmann::json(*r.memory).contains("growth_per_call_bytes"));
}

TEST(MemoryRule, UnderTheMaximumOrWithoutOneNothingChanges) {
  CaseResult under = measured(Status::Pass, 1000 * kMiB, 1536 * kMiB);
  judge_memory(under);
  EXPECT_EQ(under.status, Status::Pass);
  EXPECT_TRUE(under.message.empty());
  CaseResult unknown = measured(Status::Pass, 1000 * kMiB, -1);
  judge_memory(unknown);
  EXPECT_EQ(unknown.status, Status::Pass);
  CaseResult none;
  none.status = Status::Pass;
  judge_memory(none);
  EXPECT_EQ(none.status, Status::Pass);
}

TEST(MemoryRule, AWorseFindingKeepsItsStatus) {
  CaseResult r = measured(Status::Mismatch, 2150 * kMiB, 1536 * kMiB);
  r.message = "out: 3 of 32 elements outside tolerance";
  judge_memory(r);
  EXPECT_EQ(r.status, Status::Mismatch);
  EXPECT_EQ(r.message, "out: 3 of 32 elements outside tolerance");
}

TEST(MemoryRule, OutOfMemoryOnTheTargetIsMemoryNotError) {
  // c10::OutOfMemoryError's words on MPS, CUDA, the CPU allocator and the sim.
  for (const char* m :
       {"MPS backend out of memory (MPS allocated: 17.00 GB, other allocations: 1.02 GB, max allowed: 18.13 GB). "
        "Tried to allocate 256 MB on private pool.",
        "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)",
        "DefaultCPUAllocator: not enough memory: you tried to allocate 68719476736 bytes.",
        "sim backend out of memory (sim allocated: 0 bytes, max allowed: 0 bytes). Tried to allocate 64 bytes on the "
        "sim "
        "device."}) {
    EXPECT_TRUE(is_out_of_memory(m)) << m;
    EXPECT_EQ(classify_exception(m), Status::Memory) << m;
  }
  EXPECT_FALSE(is_out_of_memory("index 70000 is out of bounds for dimension 0 with size 3"));
  EXPECT_TRUE(needs_fresh_worker(Status::Memory, "MPS backend out of memory", true));
  CaseResult r = measured(Status::Memory, 10 * kMiB, 64 * kMiB);
  r.message = "sim backend out of memory (sim allocated: 0 bytes). Tried to allocate 128 MB";
  judge_memory(r);
  EXPECT_EQ(r.status, Status::Memory);
  EXPECT_NE(r.message.find("the device recommends at most 64.0 MiB"), std::string::npos) << r.message;
}

TEST(MemoryRule, BytesReadAsPeopleReadThem) {
  EXPECT_EQ(bytes_text(17), "17 B");
  EXPECT_EQ(bytes_text(1536 * kMiB), "1.50 GiB");
  EXPECT_EQ(bytes_text(312 * 1024), "312 KiB");
  EXPECT_EQ(bytes_text(-1), "-");
}

TEST(MemoryRule, AClassWithACaseOverMemoryIsReducedMemoryUnlessBlocked) {
  std::vector<CaseResult> cases{measured(Status::Pass, kMiB, 2 * kMiB), measured(Status::Pass, 4 * kMiB, 2 * kMiB)};
  for (auto& c : cases) judge_memory(c), recommend(c);
  auto classes = summarize_classes(cases);
  EXPECT_EQ(classes.at("model/resnet18").reduce_memory, 1);
  EXPECT_EQ(classes.at("model/resnet18").recommendation(), "reduce memory");
  cases.push_back(measured(Status::Crash, kMiB, 2 * kMiB));
  recommend(cases.back());
  EXPECT_EQ(summarize_classes(cases).at("model/resnet18").recommendation(), "blocked");
}

TEST(MemoryFiguresJson, RoundTripAndMissingFiguresAreNull) {
  CaseResult r = measured(Status::Pass, 5 * kMiB, 8 * kMiB);
  r.memory->driver_peak = -1;
  const nlohmann::json j = r;
  EXPECT_EQ(j.at("memory").at("peak_allocated_bytes"), 5 * kMiB);
  EXPECT_TRUE(j.at("memory").at("driver_peak_bytes").is_null());
  EXPECT_EQ(j.at("memory").at("peak_source"), "counter");
  const CaseResult back = j.get<CaseResult>();
  ASSERT_TRUE(back.memory.has_value());
  EXPECT_EQ(back.memory->peak_allocated, 5 * kMiB);
  EXPECT_EQ(back.memory->driver_peak, -1);
  EXPECT_EQ(back.memory->process_peak, 300 * kMiB);
  EXPECT_EQ(back.memory->recommended_max, 8 * kMiB);
  // A report from before memory figures has none.
  nlohmann::json old = j;
  old.erase("memory");
  EXPECT_FALSE(old.get<CaseResult>().memory.has_value());
}

TEST(MemoryReports, EveryFormatCarriesTheFiguresAndTheFinding) {
  RunReport report;
  report.run["target"] = "sim";
  CaseResult over = measured(Status::Pass, 2150 * kMiB, 1536 * kMiB);
  judge_memory(over);
  recommend(over);
  CaseResult fits = measured(Status::Pass, 3 * kMiB, 1536 * kMiB);
  fits.id = "op/shape/cat/f32/contiguous/forward";
  recommend(fits);
  report.cases = {over, fits};
  const std::string csv = render_csv_for_tests(report);
  EXPECT_NE(csv.find("peak_allocated_bytes,driver_peak_bytes,process_peak_bytes,recommended_max_bytes"),
            std::string::npos);
  EXPECT_NE(csv.find(std::to_string(2150 * kMiB) + "," + std::to_string(4300 * kMiB) + "," +
                     std::to_string(300 * kMiB) + "," + std::to_string(1536 * kMiB)),
            std::string::npos)
      << csv;
  const std::string md = render_markdown(report);
  EXPECT_NE(md.find("## Memory on the target (2 cases measured, the device recommends at most 1.50 GiB)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| model/resnet18/train | memory | 2.10 GiB | 4.20 GiB | 300 MiB |"), std::string::npos) << md;
  EXPECT_NE(md.find("1 to reduce memory"), std::string::npos) << md;
  const std::string html = render_html(report);
  EXPECT_NE(html.find("<th>peak memory</th>"), std::string::npos);
  EXPECT_NE(html.find(">2.10 GiB</td>"), std::string::npos);
  EXPECT_NE(html.find("s-memory"), std::string::npos);
  EXPECT_NE(finding_detail(over).find("memory: peak 2.10 GiB allocated (counter), driver 4.20 GiB, process 300 MiB, "
                                      "recommended max 1.50 GiB"),
            std::string::npos)
      << finding_detail(over);
}

TEST(ProcessMemory, TheResidentPeakIsReadAndResetsToWhatIsResidentNow) {
  const auto before = process_peak_bytes();
  ASSERT_TRUE(before.has_value());
  EXPECT_GT(*before, 0);
  // 64 MiB touched, then freed: the peak holds it until reset.
  {
    std::vector<char> big(64 * kMiB);
    std::memset(big.data(), 1, big.size());
    EXPECT_GE(*process_peak_bytes(), 64 * kMiB);
    volatile char keep = big[12345];
    (void)keep;
  }
  const std::int64_t high = *process_peak_bytes();
  ASSERT_TRUE(reset_process_peak());
  EXPECT_LT(*process_peak_bytes(), high);
}
