// Recurrent family: the single-step cells and full LSTM/GRU layers with flat weight lists, where
// rounding compounds over time steps and layers.
#include <mpscheck/op.hpp>

#include <cmath>

using namespace mpscheck::op;

namespace {

constexpr int64_t kBatch = 3, kIn = 8, kHidden = 12, kSeq = 5;

// Weights are drawn randn and scaled by 1/sqrt(hidden) inside the op (nn.LSTM's init scale), so
// gates do not saturate. Not Arg::uniform: the SDK's Python draw for it does not parse (see report).
const double kScale = 1.0 / std::sqrt(static_cast<double>(kHidden));
const std::string kPyScale = python_number(kScale);

Arg weight(std::string name, std::vector<int64_t> shape) { return Arg::randn(std::move(name), std::move(shape)); }

at::Tensor w(const at::Tensor& t) { return t * kScale; }
std::string pyw(const std::string& name) { return name + " * " + kPyScale; }
const std::string kPyCellWeights = pyw("w_ih") + ", " + pyw("w_hh") + ", " + pyw("b_ih") + ", " + pyw("b_hh") + ")";

// ----- cells: x [B, in], h (and c) [B, hidden], w_ih [G*hidden, in], w_hh [G*hidden, hidden] -----

std::vector<Arg> cell_args(int64_t gates, bool lstm) {
  std::vector<Arg> a = {Arg::randn("x", {kBatch, kIn}), Arg::randn("h", {kBatch, kHidden})};
  if (lstm) a.push_back(Arg::randn("c", {kBatch, kHidden}));
  // The gate rows stay `gates` x the hidden size at any size explore tries: CPU's cells broadcast a
  // mismatched gate block without a word, which would make a target that refuses it look wrong.
  a.push_back(weight("w_ih", {gates * kHidden, kIn}).sized_as(0, "h", 1, gates));
  a.push_back(weight("w_hh", {gates * kHidden, kHidden}).sized_as(0, "h", 1, gates));
  a.push_back(weight("b_ih", {gates * kHidden}).sized_as(0, "h", 1, gates));
  a.push_back(weight("b_hh", {gates * kHidden}).sized_as(0, "h", 1, gates));
  return a;
}

const std::vector<Variant> kCellVariants = {Variant::contiguous(), Variant::transposed("w_ih"), Variant::sliced("x"),
                                            Variant::expanded("h")};

// ----- layers: flat weights per layer and direction: w_ih, w_hh, b_ih, b_hh -----

struct Layer {
  std::string name;
  int64_t gates;  // 4 for LSTM, 3 for GRU
  bool lstm;
  int64_t layers;
  bool bidirectional;
  bool batch_first;
};

int64_t dirs(const Layer& l) { return l.bidirectional ? 2 : 1; }

std::vector<Arg> layer_args(const Layer& l, std::vector<std::string>& weight_names) {
  std::vector<Arg> a;
  a.push_back(Arg::randn(
      "x", l.batch_first ? std::vector<int64_t>{kBatch, kSeq, kIn} : std::vector<int64_t>{kSeq, kBatch, kIn}));
  // The states hold one row per layer and direction; CPU reads the first rows of a longer one.
  a.push_back(Arg::randn("h", {l.layers * dirs(l), kBatch, kHidden}).pinned(0));
  if (l.lstm) a.push_back(Arg::randn("c", {l.layers * dirs(l), kBatch, kHidden}).pinned(0));
  for (int64_t layer = 0; layer < l.layers; ++layer) {
    const int64_t in = layer == 0 ? kIn : kHidden * dirs(l);
    for (int64_t d = 0; d < dirs(l); ++d) {
      const std::string suffix = "_l" + std::to_string(layer) + (d ? "r" : "");
      for (const auto& [stem, shape] :
           std::vector<std::pair<std::string, std::vector<int64_t>>>{{"w_ih", {l.gates * kHidden, in}},
                                                                     {"w_hh", {l.gates * kHidden, kHidden}},
                                                                     {"b_ih", {l.gates * kHidden}},
                                                                     {"b_hh", {l.gates * kHidden}}}) {
        weight_names.push_back(stem + suffix);
        Arg arg = weight(stem + suffix, shape);
        arg.sized_as(0, "h", 2, l.gates);  // as in the cells
        if (stem == "w_ih" && layer > 0) arg.sized_as(1, "h", 2, dirs(l));
        a.push_back(std::move(arg));
      }
    }
  }
  return a;
}

void add_layer(const Family& recurrent, const Layer& l) {
  std::vector<std::string> names;
  std::vector<Arg> args = layer_args(l, names);
  const size_t first_weight = l.lstm ? 3 : 2;
  OpFn fn = [l, first_weight](const Tensors& a) {
    std::vector<at::Tensor> params;
    for (size_t i = first_weight; i < a.size(); ++i) params.push_back(w(a[i]));
    if (l.lstm) {
      auto [out, hy, cy] =
          at::lstm(a[0], {a[1], a[2]}, params, true, l.layers, 0.0, false, l.bidirectional, l.batch_first);
      return Tensors{out, hy, cy};
    }
    auto [out, hy] = at::gru(a[0], a[1], params, true, l.layers, 0.0, false, l.bidirectional, l.batch_first);
    return Tensors{out, hy};
  };
  std::string list = "[";
  for (size_t i = 0; i < names.size(); ++i) list += (i ? ", " : "") + pyw(names[i]);
  list += "]";
  const std::string flags = std::string(", True, ") + std::to_string(l.layers) + ", 0.0, False, " +
                            (l.bidirectional ? "True" : "False") + ", " + (l.batch_first ? "True" : "False") + ")";
  std::string python = l.lstm ? "torch.lstm(x, (h, c), " + list + flags : "torch.gru(x, h, " + list + flags;
  recurrent.op(l.name, std::move(args), std::move(fn), std::move(python))
      .variants({Variant::contiguous(), Variant::transposed("w_hh_l0"), Variant::sliced("x")})
      .add();
}

}  // namespace

// clang-format off
MPSCHECK_CATALOG(recurrent_cases) {
  Family recurrent(catalog, "recurrent");
  recurrent.dtypes(dtypes::floats).variants(kCellVariants);
  using A = const Tensors&;
  recurrent.op("lstm_cell", cell_args(4, true),
               [](A a) {
                 auto [hy, cy] = at::lstm_cell(a[0], {a[1], a[2]}, w(a[3]), w(a[4]), w(a[5]), w(a[6]));
                 return Tensors{hy, cy};
               },
               "torch.lstm_cell(x, (h, c), " + kPyCellWeights).add();
  recurrent.op("gru_cell", cell_args(3, false), [](A a) { return at::gru_cell(a[0], a[1], w(a[2]), w(a[3]), w(a[4]), w(a[5])); },
               "torch.gru_cell(x, h, " + kPyCellWeights).add();
  recurrent.op("rnn_tanh_cell", cell_args(1, false),
               [](A a) { return at::rnn_tanh_cell(a[0], a[1], w(a[2]), w(a[3]), w(a[4]), w(a[5])); },
               "torch.rnn_tanh_cell(x, h, " + kPyCellWeights).add();
  recurrent.op("rnn_relu_cell", cell_args(1, false),
               [](A a) { return at::rnn_relu_cell(a[0], a[1], w(a[2]), w(a[3]), w(a[4]), w(a[5])); },
               "torch.rnn_relu_cell(x, h, " + kPyCellWeights).add();

  for (const Layer& l : std::vector<Layer>{
           {"lstm", 4, true, 1, false, false},
           {"lstm_2layer", 4, true, 2, false, false},
           {"lstm_batch_first", 4, true, 1, false, true},
           {"lstm_bidirectional", 4, true, 1, true, false},
           {"lstm_2layer_bidirectional_batch_first", 4, true, 2, true, true},
           {"gru", 3, false, 1, false, false},
           {"gru_2layer", 3, false, 2, false, false},
           {"gru_batch_first", 3, false, 1, false, true},
           {"gru_bidirectional", 3, false, 1, true, false},
           {"gru_2layer_bidirectional_batch_first", 3, false, 2, true, true},
       })
    add_layer(recurrent, l);
}
// clang-format on

MPSCHECK_PLUGIN("ops-recurrent", "0.1.0")
