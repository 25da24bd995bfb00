// The Workload interface: what a plugin gives mpscheck, and what mpscheck asks of it.
//
// A workload is one case (`op/activation/gelu/f32/contiguous`, `model/mlp/train`). mpscheck
// instantiates it several times — CPU float32 reference, CPU float64 gold where it decides
// something, the target device — always from the same seed, so inputs and initial weights are
// identical on every side. It then compares the named outputs and times `iterate()`.
#pragma once

#include <mpscheck/vocabulary.hpp>

#include <ATen/ATen.h>
#include <boost/config.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mpscheck {

// Which run an instance belongs to. Real workloads compute the same thing on every side; only
// the test-only faults plugin looks at it, to plant failures on the target side.
enum class Side { Reference, Gold, Target };

struct Placement {
  c10::Device device = c10::Device(c10::kCPU);
  // The floating-point dtype to compute in; integer and bool tensors keep their own dtype.
  c10::ScalarType dtype = c10::kFloat;
  Side side = Side::Reference;
  // When set, floating inputs and weights are rounded to this dtype, then computed in `dtype`:
  // what a reduced-precision dtype can deliver at best, the baseline its target is judged by.
  c10::ScalarType round_inputs_to = c10::ScalarType::Undefined;
  // Model cases: every floating parameter, and every tapped layer's output (model::tap; in training
  // also the gradient flowing back into it), moved by about one unit of `dtype`, up or down (signs
  // from generators of their own, so no other draw of the run changes). The judge's nudged witness:
  // how far a one-unit difference carries the case in that dtype (checks/verdict.hpp, mark_chaotic).
  // A workload that does not implement it (TorchScript models) gives the witness itself, so nothing
  // of it is judged chaotic.
  bool nudge_parameters = false;
};

struct Setup {
  std::uint64_t seed = 0;
  bool quick = false;  // small shapes and few steps, for CI and tests
};

// A dimension whose size the op ties to another input's: shape[dim] == factor * `of`.shape[of_dim]
// (an LSTM's weight rows are 4 x its hidden size), or, with `of` empty, to its declared size (a
// count other arguments fix: an LSTM state's layers x directions). `mpscheck explore` keeps the tie
// when it varies sizes, rather than feeding the op shapes it was never meant to take.
struct SizeTie {
  std::size_t dim = 0;
  std::string of;  // the other input's name; empty: pinned as declared
  std::size_t of_dim = 0;
  std::int64_t factor = 1;
};

// One tensor input of a case as declared: its name and logical shape (what the op sees, whatever
// its layout in memory). `mpscheck explore` reads them to make the same case at other sizes.
struct InputShape {
  std::string name;
  std::vector<std::int64_t> shape;
  // Its declared layout in memory: "contiguous", "transposed", "sliced", "channels_last",
  // "expanded"; empty when the workload does not say.
  std::string layout{};
  // Its dimensions tied to other inputs' (equal declared sizes are varied together anyway; a tie
  // says so for a multiple).
  std::vector<SizeTie> ties = {};
  // A floating-point tensor that with_inputs can also give as a 0-dim tensor on the CPU
  // (InputLayout::CpuScalar).
  bool floating = false;
};

// A layout `mpscheck explore` may give an input in place of its declared one.
enum class InputLayout : std::uint8_t {
  Declared,      // as the case declares it
  Contiguous,    // row-major
  Transposed,    // the last two dimensions swapped in memory (2+ dimensions)
  ChannelsLast,  // NCHW viewed over NHWC memory (4 dimensions)
  // A 0-dim tensor (its shape empty) that stays on the CPU on every side, the target's included:
  // PyTorch takes a CPU 0-dim tensor as a scalar operand beside device tensors.
  CpuScalar,
};

// One input of a variant: its logical shape, its layout, and how many elements into its storage
// it starts (a tensor sliced out of a longer buffer; 0: at the start).
struct InputVariant {
  std::vector<std::int64_t> shape;
  InputLayout layout = InputLayout::Declared;
  std::int64_t storage_offset = 0;
};

// One named result to compare: "out", "out1", "grad/x0", "loss/step3", "param/fc1.weight".
struct Output {
  Output() = default;
  Output(std::string name, at::Tensor value) : name(std::move(name)), value(std::move(value)) {}

  std::string name;
  at::Tensor value;
  // An index output whose value is ambiguous under ties (argmax, sort's indices, topk): the
  // tensor it indexes into on this side, along `index_dim` (or flattened, `index_flat`). mpscheck
  // then checks it by meaning: the target's index must select a value equal to the one the
  // reference's index selects.
  at::Tensor indexes_into;
  std::int64_t index_dim = -1;
  bool index_flat = false;
  // A statistic of a random sample: the standard error of each element at this sample size.
  // mpscheck then allows kStatisticSigmas of them (checks/verdict.hpp), not a fixed tolerance.
  at::Tensor standard_error;
};
using Outputs = std::vector<Output>;

// Where `mpscheck repro` aims a reproducer: the device and dtype become constants in the script.
struct ReproTarget {
  std::string device = "cpu";
  std::string dtype = "float32";
  std::uint64_t seed = 0;
  bool quick = false;
};

// One call of a named layer, as an op-level reproducer needs it (Instance::layer_call): the op as
// a Python expression over named tensors, and those tensors as the instance held them when the
// call began (before a batch norm in training updated its running statistics).
struct LayerCall {
  // e.g. "torch.nn.functional.conv2d(x, weight, None, stride=(2, 2), padding=(1, 1), dilation=(1, 1), groups=1)"
  std::string python;
  Outputs tensors;  // the layer's input "x" first, then the parameters and buffers `python` names
  // Why there is no call when `python` is empty ("layer fc is tapped code, not one module").
  std::string missing;
};

// One workload set up on one placement. Created by Workload::instantiate().
class BOOST_SYMBOL_VISIBLE Instance {
 public:
  virtual ~Instance() = default;
  // The whole computation whose outputs are compared. Should give the same result on every call
  // (training workloads reset their model and optimizer to the seeded initial state), but it may
  // mutate its inputs (x.sub_(0.5)) and return views of them: mpscheck clones every output as
  // soon as run() returns, and checks the reference's determinism on a second, fresh instance
  // from the same seed. A passing case's target instance is called once more after its first call
  // (and its timed ones), and that later call must give what the first gave; where it does not,
  // the reference instance is called twice too, and an output that changes between the
  // reference's own calls by more than its tolerance (an input written in place) is not compared.
  // Output names must be unique (two outputs with one name are refused), and a case must return
  // at least one output.
  virtual Outputs run() = 0;
  // One unit of the work that is timed. Defaults to run(); override to skip output collection.
  virtual void iterate() { run(); }
  // The outputs of named layers, in execution order, for one forward pass from the initial
  // state (training cases may follow them with one backward's gradients, in backward order).
  // mpscheck compares them to name the first layer where a failing model case diverges.
  // Empty when the workload cannot trace itself.
  virtual Outputs trace_layers() { return {}; }
  // The `call`-th call (0-based) of the layer trace_layers() names `layer`, in the same forward
  // pass from the initial state: the layer's op, input and parameters, for an op-level reproducer
  // of a model finding. A layer may run several times in a pass (DCGAN's D scores real images,
  // then fakes twice); its k-th call is the k-th output of that name in trace_layers().
  virtual LayerCall layer_call(const std::string& layer, int call) {
    return {{},
            {},
            "this case cannot capture one call of its layers (" + layer + ", call " + std::to_string(call + 1) + ")"};
  }
};

class BOOST_SYMBOL_VISIBLE Workload {
 public:
  virtual ~Workload() = default;

  // Unique id, '/'-separated, kind first: op/<family>/<op>/<dtype>/<variant>, model/<name>/<mode>.
  virtual std::string id() const = 0;
  virtual Kind kind() const = 0;
  virtual std::vector<std::string> tags() const { return {}; }
  // Tolerance family (see checks/tolerance.cpp): "elementwise", "conv", "matmul", "reduction", ...
  virtual std::string family() const { return "elementwise"; }
  // The floating dtype this case is about. float32 cases follow the target's dtype policy
  // (`--target cpu:bfloat16`); a float16/bfloat16 case runs in its own dtype on the target.
  virtual c10::ScalarType dtype() const { return c10::kFloat; }
  // Whether a CPU float64 run is meaningful (for attributing errors to the target or to float32).
  virtual bool has_gold() const { return true; }
  // Outputs are samples of a random process: compare statistics, never values.
  virtual bool is_random() const { return false; }

  // Builds inputs and weights on CPU from setup.seed, then moves them to `where`.
  virtual std::unique_ptr<Instance> instantiate(const Setup& setup, const Placement& where) const = 0;

  // A self-contained Python script (only `torch`) that rebuilds the inputs and runs the case on
  // CPU and on `target`. Empty when the workload cannot describe itself.
  virtual std::string reproducer(const ReproTarget& target) const { return {}; }

  // The case's tensor inputs as declared, in order, for `mpscheck explore`. Empty: the case
  // cannot be made at other sizes.
  virtual std::vector<InputShape> input_shapes() const { return {}; }
  // The same case (op, dtype, layouts, seed, direction) over inputs of other sizes, one shape per
  // input_shapes() entry in that order, or nullptr when it cannot be made. The host gives it its
  // id; what this one's id() says is not used.
  virtual std::unique_ptr<Workload> with_input_shapes(const std::vector<std::vector<std::int64_t>>& shapes) const {
    (void)shapes;
    return nullptr;
  }
  // The same, with each input also in a layout and at a storage offset of its own. The default
  // makes only what with_input_shapes can: every input as declared, at offset 0.
  virtual std::unique_ptr<Workload> with_inputs(const std::vector<InputVariant>& inputs) const {
    std::vector<std::vector<std::int64_t>> shapes;
    for (const InputVariant& in : inputs) {
      if (in.layout != InputLayout::Declared || in.storage_offset != 0) return nullptr;
      shapes.push_back(in.shape);
    }
    return with_input_shapes(shapes);
  }
};

}  // namespace mpscheck
