// Model cases from a LibTorch C++ frontend network. One ModelDef gives two workloads:
//   model/<name>/infer  eval mode, no grad: the forward output is compared;
//   model/<name>/train  N training steps (ModelDef::train_step; by default forward + loss +
//                       backward + optimizer step) on one seeded batch: the loss at every step,
//                       the first step's gradients, each parameter's update and the final
//                       parameters are compared (see run()).
// A def may differ by mode (Mode: --quick or not, /infer or /train): build and batch are told
// which case they serve, e.g. an ImageNet network infers at batch 1 and trains on a batch.
// Weights come from torch::manual_seed(seed) before build(), so every side starts identical.
// Dropout modules are switched off in training cases: their masks come from each device's own
// random generator and could never agree; everything else trains as written.
#pragma once

#include <mpscheck/detail/layer_python.hpp>
#include <mpscheck/plugin.hpp>
#include <mpscheck/workload.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/record_function.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace mpscheck::model {

struct Batch {
  std::vector<at::Tensor> inputs;  // floating inputs are cast to the compute dtype
  at::Tensor target;               // labels or regression targets (kept in their dtype unless floating)
};

// Layer tracing for localisation: model code passes each named layer's output through tap(),
// e.g. `x = tap("conv1", conv1->forward(x));`. Free when nothing is tracing.
inline Outputs*& tap_sink() {
  thread_local Outputs* sink = nullptr;
  return sink;
}
// The dtype the float32 baseline run of a reduced-precision target rounds every tapped layer's
// output to (Undefined: none). A float16/bfloat16 network rounds every intermediate, and those
// roundings compound from layer to layer; rounding only inputs and weights would make the
// baseline look better than honest reduced precision can be. The cast is differentiable, so a
// training baseline also rounds the gradients flowing back through each tapped layer.
inline c10::ScalarType& tap_rounding() {
  thread_local c10::ScalarType dtype = c10::ScalarType::Undefined;
  return dtype;
}
// Capturing one call of one layer (Instance::layer_call): which call is wanted, how many calls of
// that name have been tapped so far, and what the wanted one was.
struct LayerCapture {
  std::string layer;
  int call = 0;
  int seen = 0;
  bool captured = false;
  LayerCall result;
};
inline LayerCapture*& capture_sink() {
  thread_local LayerCapture* sink = nullptr;
  return sink;
}
// The nudged witness's layer outputs (Placement::nudge_parameters): a device that rounds each
// layer's result, and the gradient flowing back into it, another way moves them a unit either way;
// moving only the parameters moves a wide layer's output far less (a dot product of K terms
// averages their units down by about sqrt(K)). While set, tap() multiplies each tapped output by 1 +- one unit of the
// dtype at 1, the sign drawn per element from `gen`; the product is differentiable, so a training run's gradient
// flowing back through the layer is moved by the same factor.
struct TapNudge {
  double unit = 0;  // 0: off
  at::Generator gen;
};
inline TapNudge& tap_nudge() {
  thread_local TapNudge nudge;
  return nudge;
}
// One unit in the last place at 1 of `dtype`, the size of every nudge (parameters and layers).
inline double nudge_unit(c10::ScalarType dtype) {
  return std::ldexp(1.0, dtype == c10::kBFloat16 ? -7 : dtype == c10::kHalf ? -10 : -23);
}
inline at::Tensor tap(const std::string& layer, const at::Tensor& x) {
  {
    // For mpscheck's op recorder (core/op_record.hpp): the calls since the previous tap made this layer.
    RECORD_USER_SCOPE("mpscheck.tap:" + layer);
  }
  const c10::ScalarType round = tap_rounding();
  at::Tensor y =
      round != c10::ScalarType::Undefined && c10::isFloatingType(x.scalar_type()) ? x.to(round).to(x.scalar_type()) : x;
  if (const TapNudge& nudge = tap_nudge(); nudge.unit > 0 && y.defined() && c10::isFloatingType(y.scalar_type())) {
    const at::Tensor up = at::rand(y.sizes(), nudge.gen, at::TensorOptions(c10::kCPU)).lt(0.5).to(y.device());
    y = y * at::where(up, 1 + nudge.unit, 1 - nudge.unit).to(y.scalar_type());
  }
  if (Outputs* sink = tap_sink()) sink->push_back({layer, y.detach().clone()});
  if (LayerCapture* capture = capture_sink(); capture && capture->layer == layer) ++capture->seen;
  return y;
}
// Runs one module as the layer `name` and taps its output: `x = model::layer("conv1", conv1, x);`.
// Unlike tap() around a forward, the trace then knows the layer's op, input and parameters, so a
// model finding localised to it gets an op-level reproducer. `module` is a module holder
// (torch::nn::Conv2d) or a Sequential's torch::nn::AnyModule.
template <class Module>
at::Tensor layer(const std::string& name, Module& module, const at::Tensor& x) {
  RECORD_USER_SCOPE("mpscheck.layer:" + name);  // the calls inside are this layer's (core/op_record.hpp)
  LayerCapture* capture = capture_sink();
  const bool wanted = capture && !capture->captured && capture->layer == name && capture->seen == capture->call;
  if constexpr (std::is_same_v<Module, torch::nn::AnyModule>) {
    if (wanted) capture->result = detail::spell_layer(*module.ptr(), x, name), capture->captured = true;
    return tap(name, module.forward(x));
  } else {
    if (wanted) capture->result = detail::spell_layer(*module.ptr(), x, name), capture->captured = true;
    return tap(name, module->forward(x));
  }
}
// Sets tap_rounding() for one run, and restores it when the run ends or throws.
class TapRounding {
 public:
  explicit TapRounding(c10::ScalarType dtype) : saved_(tap_rounding()) { tap_rounding() = dtype; }
  ~TapRounding() { tap_rounding() = saved_; }
  TapRounding(const TapRounding&) = delete;
  TapRounding& operator=(const TapRounding&) = delete;

 private:
  c10::ScalarType saved_;
};
// Sets tap_nudge() for one run of the nudged witness (a unit of `dtype`, signs drawn from `seed`),
// or leaves it off when `on` is false; restores it when the run ends or throws.
class TapNudging {
 public:
  TapNudging(bool on, c10::ScalarType dtype, std::uint64_t seed) : saved_(tap_nudge()) {
    if (on) tap_nudge() = TapNudge{nudge_unit(dtype), at::detail::createCPUGenerator(seed ^ 0x7461706e756467ULL)};
  }
  ~TapNudging() { tap_nudge() = saved_; }
  TapNudging(const TapNudging&) = delete;
  TapNudging& operator=(const TapNudging&) = delete;

 private:
  TapNudge saved_;
};

// The forward most models take: the network on the batch's inputs, in order (one or two of
// them). Empty for any other network; its def sets forward itself.
template <class Net>
std::function<at::Tensor(Net& net, const Batch& batch)> forward_inputs() {
  if constexpr (requires(Net & net, const at::Tensor& x) { net->forward(x); })
    return [](Net& net, const Batch& b) { return net->forward(b.inputs.at(0)); };
  else if constexpr (requires(Net & net, const at::Tensor& x) { net->forward(x, x); })
    return [](Net& net, const Batch& b) { return net->forward(b.inputs.at(0), b.inputs.at(1)); };
  else
    return nullptr;
}

// Which case a def's build and batch serve: a --quick run or a full one, the /train case or /infer.
struct Mode {
  bool quick = false;
  bool train = false;
};

// The one of three values that serves `mode`: `quick` for both cases of a --quick run, else
// `train` for the /train case and `infer` for /infer.
template <class T>
const T& pick(Mode mode, const T& infer, const T& train, const T& quick) {
  return mode.quick ? quick : mode.train ? train : infer;
}

// One value per mode, as pick() chooses; `of(mode)` picks one:
// `def.build = [widths](model::Mode m) { return Net(widths.of(m)); };`
template <class T>
struct PerMode {
  T infer, train, quick;
  const T& of(Mode mode) const { return pick(mode, infer, train, quick); }
};

using Optimizers = std::vector<std::unique_ptr<torch::optim::Optimizer>>;

template <class Net>
struct ModelDef;

// What one training step works on (ModelDef::train_step).
template <class Net>
struct Step {
  const ModelDef<Net>& def;
  Net& net;
  const Batch& batch;        // on the device, in the compute dtype
  Optimizers& optimizers;    // the def's optimizers, made afresh whenever the network is rebuilt
  Outputs* grads = nullptr;  // set on the first step only: where record_grads() writes
  // On the first step, records every parameter's gradient as it is now ("grad0/<param>"), each
  // parameter once: call it after a backward and before the optimizer step that consumes it. A
  // step that trains parts of the network in turn calls it once per part.
  void record_grads() const {
    if (!grads) return;
    for (const auto& p : net->named_parameters()) {
      if (!p.value().grad().defined()) continue;
      std::string name = "grad0/" + p.key();
      if (std::none_of(grads->begin(), grads->end(), [&](const Output& o) { return o.name == name; }))
        grads->push_back({std::move(name), p.value().grad().detach().clone()});
    }
  }
};

// The ordinary training step, ModelDef::train_step's default: clear the gradients, the def's
// forward and loss, backward, record the first step's gradients, step every optimizer. Returns the loss.
template <class Net>
at::Tensor ordinary_step(const Step<Net>& step) {
  for (auto& optimizer : step.optimizers) optimizer->zero_grad();
  at::Tensor loss = step.def.loss(step.def.forward(step.net, step.batch), step.batch);
  {
    RECORD_USER_SCOPE("mpscheck.tap:loss");  // names the loss's calls for the op recorder (core/op_record.hpp)
  }
  loss.backward();
  step.record_grads();
  RECORD_USER_SCOPE("mpscheck.layer:optimizer step");
  for (auto& optimizer : step.optimizers) optimizer->step();
  return loss;
}

template <class Net>
struct ModelDef {
  std::string name;
  std::vector<std::string> tags;
  std::function<Net(Mode mode)> build;
  std::function<Batch(Mode mode, at::Generator& gen)> batch;                                // CPU tensors
  std::function<at::Tensor(Net& net, const Batch& batch)> forward = forward_inputs<Net>();  // see forward_inputs
  std::function<at::Tensor(const at::Tensor& output, const Batch& batch)> loss;
  // The optimizer over all of the network's parameters (model::optimizer<Optim>(options)).
  std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<at::Tensor> params)> optimizer;
  // For a network whose parts train apart (a GAN's discriminator and generator): its optimizers,
  // made from the network. Unset: the one `optimizer` over all parameters.
  std::function<Optimizers(Net& net)> optimizers;
  // One training step; returns the loss the case compares at that step ("loss/step<i>", of any
  // shape, e.g. one loss per part the step trains). A network with its own training procedure
  // writes it here, never inside forward(), which stays the plain forward pass the inference
  // case runs; the training case's layer trace runs the first step. Default: ordinary_step.
  std::function<at::Tensor(const Step<Net>& step)> train_step = ordinary_step<Net>;
  int steps = 4;
  int quick_steps = 2;
};

namespace detail {
// Placement::nudge_parameters: each floating parameter times 1 +- one unit in the last place of
// `dtype` at 1 (2^-7 for bfloat16, 2^-10 for float16, 2^-23 otherwise), the sign drawn per element.
inline void nudge_parameters(torch::nn::Module& net, c10::ScalarType dtype, std::uint64_t seed) {
  torch::NoGradGuard no_grad;
  const double unit = nudge_unit(dtype);
  at::Generator gen = at::detail::createCPUGenerator(seed ^ 0x6e75646765ULL);
  for (auto& p : net.parameters()) {
    if (!c10::isFloatingType(p.scalar_type())) continue;
    const at::Tensor up = at::rand(p.sizes(), gen, p.options().device(c10::kCPU)).lt(0.5).to(p.device());
    p.set_data(p * at::where(up, 1 + unit, 1 - unit).to(p.scalar_type()));
  }
}
}  // namespace detail

inline Batch place(const Batch& b, const Placement& where) {
  const bool round = where.round_inputs_to != c10::ScalarType::Undefined;
  auto move = [&](at::Tensor t) {
    if (!t.defined()) return t;
    if (round && c10::isFloatingType(t.scalar_type())) t = t.to(where.round_inputs_to).to(t.scalar_type());
    return c10::isFloatingType(t.scalar_type()) ? t.to(where.device, where.dtype) : t.to(where.device);
  };
  Batch out;
  for (const auto& t : b.inputs) out.inputs.push_back(move(t));
  out.target = move(b.target);
  return out;
}

template <class Net>
class ModelInstance final : public Instance {
 public:
  ModelInstance(const ModelDef<Net>& def, bool train, const Setup& setup, const Placement& where)
      : def_(def), train_(train), mode_{.quick = setup.quick, .train = train}, setup_(setup), where_(where) {
    at::Generator gen = at::detail::createCPUGenerator(setup.seed + 7);
    batch_ = place(def.batch(mode_, gen), where);
    reset();
  }

  // Training outputs, each compared at its own scale: the loss at every step; the gradients of
  // the first step ("grad0/<param>"), where a wrong backward kernel shows before the optimizer
  // blurs it; each parameter's update over all steps ("update/<param>", after minus before), which
  // is what the optimizer did, at the size of lr (a no-op or 10%-short step is plain there, while
  // beside the parameters themselves, a hundred times larger, it drowns in their rounding); and
  // the final parameters. A floating buffer (batch norm's running mean and variance) is state the
  // training step writes as well, read only in eval mode, so a wrong update of it shows in no loss:
  // it is compared the same way ("buffer_update/<buffer>", "buffer/<buffer>"), apart from the
  // parameters, whose updates the optimizer makes and which are judged as a family.
  Outputs run() override {
    const TapRounding rounding(where_.round_inputs_to);
    const TapNudging nudging(where_.nudge_parameters, where_.dtype, setup_.seed);
    if (!train_) {
      torch::NoGradGuard no_grad;
      return {{"out", def_.forward(net_, batch_).detach()}};
    }
    reset();
    // (update prefix, final prefix, name, tensor) of every parameter, then every floating buffer
    struct State {
      const char *update, *final;
      std::string name;
      at::Tensor value, before;
    };
    std::vector<State> state;
    for (const auto& p : net_->named_parameters()) state.push_back({"update/", "param/", p.key(), p.value(), {}});
    for (const auto& b : net_->named_buffers())  // an integer counter has no rounding to judge
      if (b.value().is_floating_point()) state.push_back({"buffer_update/", "buffer/", b.key(), b.value(), {}});
    for (State& st : state) st.before = st.value.detach().clone();
    Outputs losses, grads;
    const int steps = setup_.quick ? def_.quick_steps : def_.steps;
    for (int s = 0; s < steps; ++s) {
      losses.push_back({"loss/step" + std::to_string(s), step(s == 0 ? &grads : nullptr).detach()});
    }
    Outputs outs = std::move(losses);
    for (auto& g : grads) outs.push_back(std::move(g));
    for (const State& st : state) outs.push_back({st.update + st.name, st.value.detach() - st.before});
    for (const State& st : state) outs.push_back({st.final + st.name, st.value.detach().clone()});
    return outs;
  }

  // Inference: the tapped layers of one forward pass. Training: those of the first training step
  // (the def's train_step from the initial weights, so a step that runs a layer again after
  // updating part of the network traces that call too), and what a forward pass cannot show, a
  // bug in a backward kernel: every gradient that step recorded ("backward/<param>"), last
  // registered first, since backward reaches the last layers first and the first gradient that
  // diverges names the layer whose backward is wrong.
  Outputs trace_layers() override {
    const TapRounding rounding(where_.round_inputs_to);  // the rounded baseline's trace, as its run()
    reset();
    Outputs layers, grads;
    tap_sink() = &layers;
    try {
      first_pass(&grads);
    } catch (...) {
      tap_sink() = nullptr;
      throw;
    }
    tap_sink() = nullptr;
    const auto params = net_->named_parameters();
    const auto& items = params.items();
    for (auto it = items.rbegin(); it != items.rend(); ++it)
      for (auto& g : grads)
        if (g.name == "grad0/" + it->key()) layers.push_back({"backward/" + it->key(), std::move(g.value)});
    return layers;
  }

  // The wanted call of `layer` in the pass trace_layers() runs, from the same state (the seeded
  // weights; a batch norm's running statistics, and in training the parameters a step updated, as
  // earlier calls in that pass left them).
  LayerCall layer_call(const std::string& layer, int call) override {
    reset();
    LayerCapture capture;
    capture.layer = layer;
    capture.call = call;
    capture_sink() = &capture;
    try {
      first_pass(nullptr);
    } catch (...) {
      capture_sink() = nullptr;
      throw;
    }
    capture_sink() = nullptr;
    if (capture.captured) return std::move(capture.result);
    LayerCall none;
    none.missing = capture.seen > call
                       ? "layer " + layer + " is tapped code (model::tap), not one module (model::layer)"
                       : "the forward pass has no call " + std::to_string(call + 1) + " of layer " + layer;
    return none;
  }

  // Timed training replays the steps run() checked: every `steps` iterations the network, its
  // buffers (batch-norm statistics) and fresh optimizers go back to the initial state, so each
  // timed step is one whose loss a verdict compared. Stepping on for thousands of steps timed a
  // state no verdict checked (one that may diverge, or reach denormals, on one side only). The
  // cost: one extra copy of the parameters and buffers, and their copy back every `steps` steps.
  void iterate() override {
    if (!train_) {
      torch::NoGradGuard no_grad;
      def_.forward(net_, batch_);
      return;
    }
    const int steps = setup_.quick ? def_.quick_steps : def_.steps;
    if (checked_start_.empty()) {
      reset();  // run() may have left the network at its last step
      torch::NoGradGuard no_grad;
      for (const auto& p : net_->parameters()) checked_start_.push_back(p.detach().clone());
      for (const auto& b : net_->buffers()) checked_start_.push_back(b.detach().clone());
      checked_net_ = net_.get();
      timed_steps_ = 0;
    } else if (timed_steps_ % steps == 0 || net_.get() != checked_net_) {  // run() in between rebuilt it
      torch::NoGradGuard no_grad;
      size_t i = 0;
      for (auto& p : net_->parameters()) p.detach().copy_(checked_start_[i++]);
      for (auto& b : net_->buffers()) b.detach().copy_(checked_start_[i++]);
      optimizers_ = make_optimizers();
      checked_net_ = net_.get();
      timed_steps_ = 0;
    }
    ++timed_steps_;
    step();
  }

 private:
  std::vector<at::Tensor> checked_start_;  // parameters, then buffers, before the first step
  const void* checked_net_ = nullptr;      // the network they were taken from
  int64_t timed_steps_ = 0;

 private:
  void reset() {
    torch::manual_seed(setup_.seed);
    net_ = def_.build(mode_);
    if (where_.round_inputs_to != c10::ScalarType::Undefined) {
      torch::NoGradGuard no_grad;
      for (auto& p : net_->parameters()) p.set_data(p.to(where_.round_inputs_to).to(p.scalar_type()));
    }
    if (where_.nudge_parameters) detail::nudge_parameters(*net_, where_.dtype, setup_.seed);
    net_->to(where_.device, where_.dtype);
    if (train_) {
      net_->train();
      for (const auto& m : net_->modules(/*include_self=*/false))
        if (m->name().find("Dropout") != std::string::npos) m->eval();
      optimizers_ = make_optimizers();
    } else {
      net_->eval();
    }
  }

  // What trace_layers() and layer_call() run after reset(): one forward pass without grad, or in
  // training the first step (`grads`, when given, receives its gradients).
  void first_pass(Outputs* grads) {
    if (train_) {
      step(grads);
      return;
    }
    torch::NoGradGuard no_grad;
    def_.forward(net_, batch_);
  }

  Optimizers make_optimizers() {
    if (def_.optimizers) return def_.optimizers(net_);
    Optimizers one;
    one.push_back(def_.optimizer(net_->parameters()));
    return one;
  }

  // One training step, the def's train_step; `grads` (when given) receives every parameter's
  // gradient before its update.
  at::Tensor step(Outputs* grads = nullptr) {
    at::Tensor loss = def_.train_step(Step<Net>{def_, net_, batch_, optimizers_, grads});
    // The reduced-precision baseline keeps its parameters in that dtype, as the target does: an
    // update smaller than a unit of the parameter's rounding is lost there too.
    if (where_.round_inputs_to != c10::ScalarType::Undefined) {
      torch::NoGradGuard no_grad;
      for (auto& p : net_->parameters()) p.copy_(p.to(where_.round_inputs_to).to(p.scalar_type()));
    }
    return loss;
  }

  const ModelDef<Net>& def_;
  bool train_;
  Mode mode_;
  Setup setup_;
  Placement where_;
  Batch batch_;
  Net net_{nullptr};
  Optimizers optimizers_;
};

template <class Net>
class ModelWorkload final : public Workload {
 public:
  ModelWorkload(ModelDef<Net> def, bool train) : def_(std::move(def)), train_(train) {}
  std::string id() const override { return "model/" + def_.name + (train_ ? "/train" : "/infer"); }
  Kind kind() const override { return Kind::Model; }
  std::vector<std::string> tags() const override {
    auto t = def_.tags;
    t.push_back(train_ ? "train" : "infer");
    return t;
  }
  std::string family() const override { return train_ ? "train" : "model"; }
  std::unique_ptr<Instance> instantiate(const Setup& setup, const Placement& where) const override {
    return std::make_unique<ModelInstance<Net>>(def_, train_, setup, where);
  }

 private:
  ModelDef<Net> def_;
  bool train_;
};

template <class Net>
void add_model(Catalog& catalog, const ModelDef<Net>& def) {
  catalog.add(std::make_unique<ModelWorkload<Net>>(def, false));
  catalog.add(std::make_unique<ModelWorkload<Net>>(def, true));
}

// Pieces most defs share; a def sets its own where the family differs.

// loss: cross-entropy of logits [N, classes] against integer labels [N].
inline at::Tensor cross_entropy(const at::Tensor& out, const Batch& b) {
  return torch::cross_entropy_loss(out, b.target);
}

// optimizer: an `Optim` over the parameters with fixed options, e.g.
// `def.optimizer = model::optimizer<torch::optim::Adam>(torch::optim::AdamOptions(1e-3));`
template <class Optim, class Options>
std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<at::Tensor>)> optimizer(Options options) {
  return [options](std::vector<at::Tensor> params) { return std::make_unique<Optim>(std::move(params), options); };
}

// Images in [0, 1) and class labels, drawn on CPU from the case's generator.
inline Batch image_batch(at::Generator& gen, int64_t n, int64_t channels, int64_t size, int64_t classes) {
  return Batch{{at::rand({n, channels, size, size}, gen, at::kFloat)}, at::randint(0, classes, {n}, gen, at::kLong)};
}

// What an image classifier's cases draw: `batch.of(mode)` images of channels x size x size in
// [0, 1) and labels in [0, classes); quick runs draw theirs at quick_size x quick_size.
struct Images {
  int64_t channels, size, classes;
  PerMode<int64_t> batch;
  int64_t quick_size;
};

// MNIST-shaped images: 1x28x28, 10 classes, `batch` of them in both cases (8 in quick runs).
inline Images mnist_images(int64_t batch) {
  return {.channels = 1,
          .size = 28,
          .classes = 10,
          .batch = {.infer = batch, .train = batch, .quick = 8},
          .quick_size = 28};
}

// An image classifier's def: seeded images and labels, the network on the images, cross-entropy.
// The family adds its optimizer and steps.
template <class Net>
ModelDef<Net> image_classifier(std::string name, std::vector<std::string> tags, std::function<Net(Mode mode)> build,
                               Images images) {
  ModelDef<Net> def;
  def.name = std::move(name);
  def.tags = std::move(tags);
  def.build = std::move(build);
  def.batch = [images](Mode mode, at::Generator& gen) {
    return image_batch(gen, images.batch.of(mode), images.channels, mode.quick ? images.quick_size : images.size,
                       images.classes);
  };
  def.loss = cross_entropy;
  return def;
}

}  // namespace mpscheck::model
