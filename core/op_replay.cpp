#include "core/op_replay.hpp"

#include "core/case_steps.hpp"
#include "core/op_call_workload.hpp"
#include "core/op_record.hpp"
#include "reports/fingerprint.hpp"

#include <mpscheck/dtype_names.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace mpscheck {

namespace {

// A finding's message in the model's lead is cut to this many characters (the call's own report keeps it whole).
constexpr size_t kLeadMessage = 400;
// The model's message names at most this many wrong calls; report.json has them all.
constexpr size_t kLeadCalls = 3;

std::string not_replayed_text(const OpRecording& rec) {
  std::string text;
  for (const auto& [why, ops] : rec.not_replayable) {
    int total = 0;
    std::vector<std::pair<int, std::string>> by_count;
    for (const auto& [op, n] : ops) total += n, by_count.emplace_back(n, op);
    std::sort(by_count.rbegin(), by_count.rend());
    std::string names;
    for (size_t i = 0; i < by_count.size() && i < 4; ++i)
      names += fmt::format("{}{} {}", names.empty() ? "" : ", ", by_count[i].second, by_count[i].first);
    if (by_count.size() > 4) names += ", ...";
    text += fmt::format("{}{}: {} ({})", text.empty() ? "" : "; ", why, total, names);
  }
  return text;
}

// The name of the first output the replay found wrong, as an index into the op's returns.
size_t failing_output(const CaseResult& r) {
  for (const OutputReport& o : r.outputs) {
    if (o.ok || o.name.rfind("out", 0) != 0) continue;
    const std::string digits =
        o.name.substr(3, o.name.find('.') == std::string::npos ? std::string::npos : o.name.find('.') - 3);
    return digits.empty() ? 0 : static_cast<size_t>(std::stoul(digits));
  }
  return 0;
}

OpCallReport report_of(const RecordedCall& call, const CaseResult& cr, const CaseResult& model,
                       const ExecuteOptions& options) {
  OpCallReport rep;
  rep.op = call.op;
  rep.overload = call.overload;
  rep.arguments = describe_arguments(call);
  rep.module = call.module;
  rep.calls = call.calls;
  rep.first_call = call.first_call;
  rep.backward = call.backward;
  rep.status = cr.status;
  rep.message = cr.message;
  rep.later_call = cr.later_call;
  if (!is_finding(cr.status)) return rep;
  CaseResult alone = cr;
  // Fingerprinted as the op case it is: op/aten/<op>/<dtype>/<layout>.
  const std::optional<c10::ScalarType> dtype = dtype_from_word(cr.dtype);
  alone.id = fmt::format("op/aten/{}/{}/{}", call.op.substr(call.op.find("::") + 2),
                         dtype ? dtype_id(*dtype) : cr.dtype, contiguous_arguments(call) ? "contiguous" : "strided");
  rep.fingerprint = fingerprint_of(alone).text();
  ReproTarget target;
  target.device = options.target.device;
  target.dtype = dtype_name(options.target.float_dtype());
  target.seed = options.setup.seed;
  target.quick = options.setup.quick;
  rep.reproducer = op_call_script(call, target, failing_output(cr), model.id, cr.message);
  return rep;
}

std::string cut(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + " ..."; }

std::string call_text(const OpCallReport& c) {
  return fmt::format("{} ({}) in {}, {} call{}", c.op, c.arguments, c.module.empty() ? "the model" : c.module, c.calls,
                     c.calls == 1 ? "" : "s");
}

}  // namespace

bool wants_op_replay(const Workload& w, const CaseResult& r, const ExecuteOptions& options) {
  return options.replay_ops && w.kind() == Kind::Model && r.phase != "reference";
}

void replay_model_ops(const RegisteredWorkload& rw, const ExecuteOptions& options, CaseResult& r) {
  const Workload& w = *rw.workload;
  OpReplay replay;
  OpRecording rec;
  try {
    std::unique_ptr<Instance> reference =
        w.instantiate(options.setup, Placement{c10::Device(c10::kCPU), c10::kFloat, Side::Reference});
    OpRecorder recorder;
    reference->run();
    rec = recorder.finish();
  } catch (...) {
    replay.note = "recording the model's ATen calls failed: " + exception_text(std::current_exception());
    r.op_replay = replay;
    return;
  }
  replay.top_level_calls = rec.top_level_calls;
  replay.beyond_bound = rec.beyond_bound;
  replay.not_replayed = not_replayed_text(rec);
  ExecuteOptions alone = options;
  alone.min_time_s = 0;  // item 4 of issue 49 (a time per op) is not here yet
  alone.cache = nullptr;
  alone.reuse_reference_times = false;
  alone.replay_ops = false;
  for (size_t i = 0; i < rec.calls.size(); ++i) {
    const OpCallWorkload call(fmt::format("{}/ops/{}", r.id, i + 1), rec.calls[i]);
    const CaseResult cr = execute_case(RegisteredWorkload{&call, rw.plugin}, alone);
    replay.calls.push_back(report_of(rec.calls[i], cr, r, options));
  }
  replay.replayed = static_cast<int>(replay.calls.size());
  r.op_replay = std::move(replay);
  lead_with_ops(r);
}

void lead_with_ops(CaseResult& r) {
  if (!r.op_replay) return;
  const OpReplay& replay = *r.op_replay;
  std::vector<const OpCallReport*> wrong;
  for (const OpCallReport& c : replay.calls)
    if (is_finding(c.status)) wrong.push_back(&c);
  const std::string bound = replay.beyond_bound > 0
                                ? fmt::format(" ({} more distinct calls past the bound of {} were not replayed)",
                                              replay.beyond_bound, kMaxRecordedCalls)
                                : std::string();
  if (wrong.empty()) {
    if ((r.status == Status::Mismatch || r.status == Status::Nan) && replay.replayed > 0)
      r.message = fmt::format(
          "no ATen call of the model is wrong alone on the target ({} distinct calls replayed{}): the network "
          "diverges as a whole{}. {}",
          replay.replayed, bound,
          r.first_diverging_layer.empty() ? std::string() : ", first at layer " + r.first_diverging_layer, r.message);
    return;
  }
  std::string text =
      fmt::format("{} of {} distinct ATen calls of the model are wrong alone on the target{}: ", wrong.size(),
                  replay.replayed, bound);
  for (size_t i = 0; i < wrong.size() && i < kLeadCalls; ++i)
    text += fmt::format("{}{}: {}: {}", i ? "; " : "", call_text(*wrong[i]), to_string(wrong[i]->status),
                        cut(wrong[i]->message, kLeadMessage));
  if (wrong.size() > kLeadCalls)
    text += fmt::format("; and {} more (report.json, op_replay)", wrong.size() - kLeadCalls);
  if (!is_finding(r.status)) {
    const std::string network = r.status == Status::Pass ? "passed its own comparison" : "was a skip: " + r.message;
    r.status = wrong.front()->status;
    r.message = text + ". The whole network " + network;
    // A wrong result's speed means nothing (checks/result.hpp, timed).
    r.reference_time.reset();
    r.target_time.reset();
    r.speedup = 0;
    r.speed_class = SpeedClass::None;
    r.speed_note.clear();
  } else {
    r.message = text + ". The whole network: " + r.message;
  }
}

}  // namespace mpscheck
