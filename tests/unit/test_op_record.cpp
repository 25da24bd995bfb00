// A model's ATen calls recorded in its reference run (core/op_record.hpp) and replayed alone
// (core/op_call_workload.hpp): which calls are kept, with what, from which module; that a replay
// computes what the model's call computed; and how the replay's findings lead a model's verdict
// (core/op_replay.hpp).
#include "core/op_call_workload.hpp"
#include "core/op_record.hpp"
#include "core/op_replay.hpp"

#include <mpscheck/model.hpp>

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using namespace mpscheck;
namespace nn = torch::nn;

struct TwoLayersImpl : nn::Module {
  TwoLayersImpl() : fc1(register_module("fc1", nn::Linear(8, 16))), fc2(register_module("fc2", nn::Linear(16, 4))) {}
  at::Tensor forward(at::Tensor x) {
    x = torch::relu(model::layer("fc1", fc1, x));
    x = model::tap("scaled", x * 0.5);
    return model::layer("fc2", fc2, x);
  }
  nn::Linear fc1, fc2;
};
TORCH_MODULE(TwoLayers);

const RecordedCall* find_call(const OpRecording& rec, const std::string& op) {
  for (const RecordedCall& c : rec.calls)
    if (c.op == op) return &c;
  return nullptr;
}

TEST(OpRecord, KeepsEachDistinctTopLevelCallWithItsModuleAndCount) {
  torch::manual_seed(0);
  TwoLayers net;
  const at::Tensor x = torch::randn({5, 8});
  OpRecording rec;
  {
    torch::NoGradGuard no_grad;
    OpRecorder recorder;
    net->forward(x);
    net->forward(x);  // the same calls again: counted, not kept twice
    rec = recorder.finish();
  }
  // The C++ frontend's Linear calls addmm on a transposed weight (a view: not replayed itself).
  std::vector<const RecordedCall*> linears;
  for (const RecordedCall& c : rec.calls)
    if (c.op == "aten::addmm") linears.push_back(&c);
  ASSERT_EQ(linears.size(), 2u);
  EXPECT_EQ(linears[0]->module, "fc1");
  EXPECT_EQ(linears[1]->module, "fc2");
  EXPECT_EQ(linears[0]->calls, 2);
  EXPECT_EQ(linears[0]->args[1].toTensor().sizes(), x.sizes());
  EXPECT_TRUE(at::equal(linears[0]->args[1].toTensor(), x));
  EXPECT_TRUE(at::equal(linears[0]->args[2].toTensor(), net->fc1->weight.t()));
  EXPECT_EQ(linears[0]->args[2].toTensor().strides(), net->fc1->weight.t().strides());
  // relu and the mul run after fc1's layer, before the tap "scaled": the tap names them.
  const RecordedCall* relu = find_call(rec, "aten::relu");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->module, "scaled");
  const RecordedCall* mul = find_call(rec, "aten::mul");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->module, "scaled");
  EXPECT_EQ(rec.top_level_calls, 12);  // t, addmm, relu, mul, t, addmm per pass
  EXPECT_EQ(rec.not_replayable.at("a view of its input").at("aten::t"), 4);
  EXPECT_EQ(rec.beyond_bound, 0);
}

TEST(OpRecord, CopiesInputsAsTheCallFoundThemWithTheirLayout) {
  const at::Tensor base = torch::randn({6, 10});
  const at::Tensor view = base.narrow(1, 2, 4).t();  // strided, at an offset
  OpRecording rec;
  {
    OpRecorder recorder;
    at::Tensor y = view.clone();
    y.mul_(3.0);  // in place: recorded with its input as it was before
    (void)at::exp(view);
    (void)base.view({60});  // a view: not replayable
    rec = recorder.finish();
  }
  const RecordedCall* exp = find_call(rec, "aten::exp");
  ASSERT_NE(exp, nullptr);
  const at::Tensor kept = exp->args[0].toTensor();
  EXPECT_EQ(kept.strides(), view.strides());
  EXPECT_EQ(kept.storage_offset(), view.storage_offset());
  EXPECT_TRUE(at::equal(kept, view));
  const RecordedCall* mul = find_call(rec, "aten::mul_");
  ASSERT_NE(mul, nullptr);
  EXPECT_TRUE(at::equal(mul->args[0].toTensor(), view));
  EXPECT_EQ(find_call(rec, "aten::view"), nullptr);
  ASSERT_TRUE(rec.not_replayable.count("a view of its input"));
  EXPECT_EQ(rec.not_replayable.at("a view of its input").at("aten::view"), 1);
}

TEST(OpRecord, BackwardCallsNameTheirAutogradNode) {
  torch::manual_seed(1);
  nn::Linear fc(6, 3);
  const at::Tensor x = torch::randn({4, 6});
  OpRecording rec;
  {
    OpRecorder recorder;
    fc->forward(x).sum().backward();
    rec = recorder.finish();
  }
  bool weight_grad = false;
  for (const RecordedCall& c : rec.calls)
    if (c.backward && c.op == "aten::mm") {
      weight_grad = true;
      EXPECT_NE(c.module.find("backward of AddmmBackward"), std::string::npos) << c.module;
    }
  EXPECT_TRUE(weight_grad);
}

TEST(OpRecord, TheBoundKeepsTheFirstCallsAndCountsTheRest) {
  OpRecording rec;
  {
    OpRecorder recorder;
    for (int n = 1; n <= kMaxRecordedCalls + 5; ++n) (void)at::exp(at::ones({n}));
    rec = recorder.finish();
  }
  EXPECT_EQ(static_cast<int>(rec.calls.size()), kMaxRecordedCalls);
  EXPECT_EQ(rec.beyond_bound, 5);
}

TEST(OpCallWorkload, ReplaysTheCallFromItsRecordedInputs) {
  const at::Tensor a = torch::randn({7, 5}), b = torch::randn({5, 3}).t().contiguous().t(), c = torch::randn({3});
  OpRecording rec;
  {
    OpRecorder recorder;
    (void)at::addmm(c, a, b, 0.5, 2.0);
    rec = recorder.finish();
  }
  ASSERT_EQ(rec.calls.size(), 1u);
  const OpCallWorkload w("model/x/infer/ops/1", rec.calls[0]);
  EXPECT_EQ(w.family(), "matmul");
  const Outputs f32 = w.instantiate({}, Placement{})->run();
  ASSERT_EQ(f32.size(), 1u);
  EXPECT_TRUE(at::allclose(f32[0].value, at::addmm(c, a, b, 0.5, 2.0)));
  const Outputs f64 = w.instantiate({}, Placement{c10::Device(c10::kCPU), c10::kDouble, Side::Gold})->run();
  EXPECT_EQ(f64[0].value.scalar_type(), c10::kDouble);
  EXPECT_EQ(describe_arguments(rec.calls[0]), "float32[3], float32[7, 5], float32[5, 3] strides (1, 5)");
  const std::string py = op_call_script(rec.calls[0], ReproTarget{}, 0, "model/x/infer", "");
  EXPECT_NE(py.find("torch.ops.aten.addmm.default(torch.as_strided(a0, (3,), (1,), 0), "), std::string::npos) << py;
  EXPECT_NE(py.find("beta=0.5, alpha=2"), std::string::npos) << py;
}

TEST(OpReplayVerdict, AWrongCallLeadsAPassingNetworksVerdict) {
  CaseResult r;
  r.id = "model/mlp/infer";
  r.status = Status::Pass;
  r.message = "";
  r.reference_time = TimingStats{1, 1, 1, 3};
  OpReplay replay;
  replay.replayed = 2;
  OpCallReport ok, wrong;
  ok.op = "aten::relu", ok.status = Status::Pass;
  wrong.op = "aten::linear", wrong.arguments = "float32[64, 32]", wrong.module = "layers.1", wrong.calls = 1;
  wrong.status = Status::Mismatch, wrong.message = "row 63 low";
  replay.calls = {ok, wrong};
  r.op_replay = replay;
  lead_with_ops(r);
  EXPECT_EQ(r.status, Status::Mismatch);
  EXPECT_EQ(r.message.rfind("1 of 2 distinct ATen calls of the model are wrong alone on the target: aten::linear "
                            "(float32[64, 32]) in layers.1, 1 call: mismatch: row 63 low",
                            0),
            0u)
      << r.message;
  EXPECT_FALSE(r.reference_time);
}

TEST(OpReplayVerdict, ADivergingNetworkWithNoWrongCallSaysSo) {
  CaseResult r;
  r.status = Status::Mismatch;
  r.message = "out differs";
  r.first_diverging_layer = "conv3";
  OpReplay replay;
  replay.replayed = 4;
  OpCallReport ok;
  ok.status = Status::Pass;
  replay.calls = {ok};
  r.op_replay = replay;
  lead_with_ops(r);
  EXPECT_EQ(r.status, Status::Mismatch);
  EXPECT_EQ(r.message,
            "no ATen call of the model is wrong alone on the target (4 distinct calls replayed): the network "
            "diverges as a whole, first at layer conv3. out differs");
}

}  // namespace
