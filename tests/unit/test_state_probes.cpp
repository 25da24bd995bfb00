// Explore's state probes without a worker or a device: the probe suffix of a variant id (parsed,
// printed, refused with a reason), the resolver making a probe's case under its id, and the
// explorer running the probes once sizes and layouts pass, with the finding each failure gives.
#include "core/case_variant.hpp"
#include "core/explore.hpp"
#include "core/registry.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace mpscheck;

namespace {

class ShapedCase final : public Workload {
 public:
  ShapedCase(std::string id, std::vector<InputShape> inputs, bool random = false)
      : id_(std::move(id)), inputs_(std::move(inputs)), random_(random) {}
  std::string id() const override { return id_; }
  Kind kind() const override { return Kind::Op; }
  bool is_random() const override { return random_; }
  std::unique_ptr<Instance> instantiate(const Setup&, const Placement&) const override { return nullptr; }
  std::string reproducer(const ReproTarget&) const override { return "import torch\n"; }
  std::vector<InputShape> input_shapes() const override { return inputs_; }
  std::unique_ptr<Workload> with_inputs(const std::vector<InputVariant>& in) const override {
    std::vector<InputShape> shapes = inputs_;
    for (size_t i = 0; i < shapes.size(); ++i) shapes[i].shape = in[i].shape;
    return std::make_unique<ShapedCase>(id_, shapes, random_);
  }

 private:
  std::string id_;
  std::vector<InputShape> inputs_;
  bool random_;
};

const char* kMm = "op/linalg/mm/f32/contiguous/forward";

std::string bad_id_message(const std::string& id) {
  try {
    parse_variant_id(id);
  } catch (const BadVariantId& e) {
    return e.what();
  }
  return "(accepted)";
}

// Explores `c` with a fake runner: `fail` decides each id's verdict; every passing variant's target
// peak is its inputs' bytes (float32), as the sim's counter would give.
ExploreOutcome explore_probing(const ShapedCase& c, const std::function<Status(const std::string&)>& fail,
                               std::vector<std::string>* ran) {
  const RunCase run = [&](const std::string& id, double) {
    ran->push_back(id);
    CaseResult r;
    r.id = id;
    r.status = fail(id);
    r.phase = r.status == Status::Pass ? "" : "target";
    r.message = r.status == Status::Pass ? "" : "memory grows with repetition: RSS grew 41.0 MiB over 18 calls";
    std::int64_t bytes = 0;
    const auto v = parse_variant_id(id);
    for (const auto& d : c.input_shapes()) {
      Shape s = d.shape;
      if (v)
        for (const auto& [name, in] : v->inputs)
          if (name == d.name) s = in.shape;
      std::int64_t n = 4;
      for (auto k : s) n *= k;
      bytes += n;
    }
    r.memory = MemoryFigures{};
    r.memory->peak_allocated = bytes;
    return r;
  };
  std::ostringstream log;
  return explore_cases({{&c, nullptr}}, {}, run, ExploreOptions{}, log);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TEST(StateProbeIds, ParseAndPrintRoundTrip) {
  const std::vector<InputShape> declared = {{"a", {24, 40}}, {"b", {40, 16}}};
  for (const StateProbe& p : {StateProbe{StateProbe::Kind::Dirty, 0}, StateProbe{StateProbe::Kind::Threads, 2},
                              StateProbe{StateProbe::Kind::Repeat, 20}}) {
    // Of the declared case: BASE@~PROBE.
    const std::string id = with_probe(kMm, p);
    EXPECT_EQ(id, std::string(kMm) + "@~" + probe_text(p));
    const auto v = parse_variant_id(id);
    ASSERT_TRUE(v) << id;
    EXPECT_EQ(v->base, kMm);
    EXPECT_TRUE(v->inputs.empty());
    EXPECT_EQ(v->probe, p);
    EXPECT_EQ(probe_of(id), p);
    // Of a variant: BASE@INPUTS~PROBE.
    const std::string at = with_probe(variant_id(kMm, declared, {{2048, 40}, {40, 16}}), p);
    EXPECT_EQ(at, std::string(kMm) + "@a=2048x40~" + probe_text(p));
    const auto w = parse_variant_id(at);
    ASSERT_TRUE(w);
    ASSERT_EQ(w->inputs.size(), 1u);
    EXPECT_EQ(w->inputs[0].input.shape, (Shape{2048, 40}));
    EXPECT_EQ(w->probe, p);
    EXPECT_EQ(with_probe(variant_id(w->base, declared, {{2048, 40}, {40, 16}}), w->probe), at);
  }
  EXPECT_EQ(probe_text({StateProbe::Kind::Threads, 2}), "threads2");
  EXPECT_EQ(probe_text({StateProbe::Kind::Repeat, 20}), "repeat20");
  EXPECT_EQ(probe_of(kMm), StateProbe{});
  EXPECT_EQ(probe_of(std::string(kMm) + "@a=1x7"), StateProbe{});
  // A layout and a probe together.
  const auto t = parse_variant_id("op/a@x=2x3+t+off1~threads8");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->inputs[0].input.layout, InputLayout::Transposed);
  EXPECT_EQ(t->probe, (StateProbe{StateProbe::Kind::Threads, 8}));
  // The probe adds no regex metacharacter: --filter ID selects exactly the id.
  for (const std::string& id : {with_probe(kMm, {StateProbe::Kind::Dirty, 0}), std::string("op/a@x=2x3~repeat1000")})
    EXPECT_EQ(id.find_first_of(".^$*+?()[]{}|\\"), std::string::npos) << id;
}

TEST(StateProbeIds, BadProbesAreRefusedSayingWhatAProbeIs) {
  for (const char* bad :
       {"op/a@~", "op/a@~dirt", "op/a@~dirty2", "op/a@~threads1", "op/a@~threads9", "op/a@~threads02", "op/a@~repeat1",
        "op/a@~repeat1001", "op/a@~repeat", "op/a@x=2x3~", "op/a@x=2x3~dirty~dirty", "op/a@~DIRTY"}) {
    const std::string message = bad_id_message(bad);
    EXPECT_NE(message.find(std::string("case id '") + bad + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("is not a state probe (~dirty, ~threadsN with N from 2 to 8, or ~repeatN with N from 2 to "
                           "1000)"),
              std::string::npos)
        << bad << ": " << message;
  }
  // The inputs before the probe are still checked.
  EXPECT_NE(bad_id_message("op/a@x=2x~dirty").find("'2x' is not a shape"), std::string::npos);
  EXPECT_NE(bad_id_message("@~dirty").find("give the declared case"), std::string::npos);
}

TEST(StateProbeIds, TheResolverMakesAProbeOfTheDeclaredCaseOrOfAVariant) {
  const ShapedCase mm(kMm, {{"a", {24, 40}}, {"b", {40, 16}}});
  const Registry registry({{&mm, nullptr}});
  CaseResolver resolver(registry);
  const RegisteredWorkload* dirty = resolver.find(std::string(kMm) + "@~dirty");
  ASSERT_TRUE(dirty);
  EXPECT_EQ(dirty->workload->id(), std::string(kMm) + "@~dirty");
  EXPECT_EQ(dirty->workload->input_shapes()[0].shape, (Shape{24, 40}));
  // Its reproducer says the state it ran in, as a comment before the script.
  const std::string script = dirty->workload->reproducer(ReproTarget{});
  EXPECT_EQ(script.rfind("# " + std::string(kMm) + "@~dirty: mpscheck ran it after allocating", 0), 0u) << script;
  EXPECT_NE(script.find("import torch\n"), std::string::npos);
  const RegisteredWorkload* repeat = resolver.find(std::string(kMm) + "@a=2048x40~repeat20");
  ASSERT_TRUE(repeat);
  EXPECT_EQ(repeat->workload->input_shapes()[0].shape, (Shape{2048, 40}));
  EXPECT_THROW(resolver.find(std::string(kMm) + "@c=2x2~dirty"), BadVariantId);
  EXPECT_THROW(resolver.find(std::string(kMm) + "@~wet"), BadVariantId);
  EXPECT_EQ(resolver.find("op/none@~dirty"), nullptr);
}

TEST(StateProbes, RunOnceSizesAndLayoutsPassAndAFailureIsAStateFinding) {
  const ShapedCase mm(kMm, {{"a", {24, 40}}, {"b", {40, 16}}});
  std::vector<std::string> ran;
  const auto out = explore_probing(
      mm, [](const std::string& id) { return ends_with(id, "~threads2") ? Status::Crash : Status::Pass; }, &ran);
  ASSERT_EQ(out.findings.size(), 1u);
  const ExploreFinding& f = out.findings[0];
  EXPECT_EQ(f.id, std::string(kMm) + "@~threads2");
  EXPECT_EQ(f.pattern, "state");
  EXPECT_EQ(f.probe, "threads2");
  EXPECT_EQ(f.status, Status::Crash);
  EXPECT_EQ(f.summary, "crashes when 2 threads run it at once; on one thread it passes");
  // Dirty first, then threads; both after every size and layout variant.
  ASSERT_GE(ran.size(), 3u);
  EXPECT_EQ(ran[ran.size() - 2], std::string(kMm) + "@~dirty");
  EXPECT_EQ(ran.back(), f.id);
  EXPECT_GT(ran.size(), 30u);
  // As a case of the regular reports: failing, under the probe's id.
  const auto results = explore_case_results(out);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, f.id);
  EXPECT_EQ(results[0].status, Status::Crash);
  EXPECT_EQ(explore_to_json(out, ExploreOptions{})["findings"][0]["probe"], "threads2");
}

TEST(StateProbes, RepeatRunsAtTheLargestPassingSizeWithinItsBoundAndALeakIsAMemoryFinding) {
  const ShapedCase mm(kMm, {{"a", {24, 40}}, {"b", {40, 16}}});
  std::vector<std::string> ran;
  const auto out = explore_probing(
      mm, [](const std::string& id) { return ends_with(id, "~repeat20") ? Status::Memory : Status::Pass; }, &ran);
  ASSERT_EQ(out.findings.size(), 1u);
  const ExploreFinding& f = out.findings[0];
  EXPECT_EQ(f.status, Status::Memory);
  EXPECT_EQ(f.probe, "repeat20");
  // The variant with the most input bytes (the fake's peak) within 8 MiB: b[1] = 32768 (b 5.0 MiB).
  std::string best;
  std::int64_t most = 0;
  for (const auto& id : ran) {
    const auto v = parse_variant_id(id);
    if (!v || v->probe.kind != StateProbe::Kind::None || id.find('+') != std::string::npos) continue;
    std::int64_t bytes = 0;
    for (const auto& d : mm.input_shapes()) {
      Shape s = d.shape;
      for (const auto& [name, in] : v->inputs)
        if (name == d.name) s = in.shape;
      bytes += 4 * s[0] * s[1];
    }
    if (bytes <= (8 << 20) && bytes > most) most = bytes, best = id;
  }
  EXPECT_EQ(f.id, best + "~repeat20");
  EXPECT_EQ(f.id, std::string(kMm) + "@b=40x32768~repeat20");
  EXPECT_EQ(f.summary.rfind("process memory grows when it runs 20 times at " + best.substr(best.find('@') + 1) +
                                " and its declared sizes: RSS grew 41.0 MiB over 18 calls",
                            0),
            0u)
      << f.summary;
}

TEST(StateProbes, ARandomCaseIsNotRunOnThreadsAndNoFailureIsNoFinding) {
  const ShapedCase normal("op/random/normal_/f32/contiguous/forward", {{"x", {64, 96}}}, /*random=*/true);
  std::vector<std::string> ran;
  const auto out = explore_probing(
      normal, [](const std::string&) { return Status::Pass; }, &ran);
  EXPECT_TRUE(out.findings.empty());
  int dirty = 0, threads = 0, repeat = 0;
  for (const auto& id : ran) {
    dirty += ends_with(id, "~dirty");
    threads += id.find("~threads") != std::string::npos;
    repeat += id.find("~repeat20") != std::string::npos;
  }
  EXPECT_EQ(dirty, 1);
  EXPECT_EQ(threads, 0);
  EXPECT_EQ(repeat, 1);
  ASSERT_EQ(out.cases.size(), 1u);
  EXPECT_EQ(out.cases[0].note, "");
}
