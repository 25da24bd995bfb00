// The fused RNN cells. LibTorch's LSTM and GRU cells (at::lstm_cell, at::gru_cell and the layers
// at::lstm / at::gru built from them) call _thnn_fused_lstm_cell / _thnn_fused_gru_cell on every
// device but the CPU, and autograd then calls their backward ops. The CPU has no kernel for any of
// them, so the sim's boxed fallback cannot run them: the sim implements them here, on the host,
// with plain ATen ops, in the working precision a GPU kernel uses (float for float16 and bfloat16).
// The outputs keep CUDA's layout, workspace included, since the backward ops read only the
// workspace the forward left them:
//   LSTM: gates [B, 4H] in the order i, f, g, o; workspace [B, 4H] = the activated gates
//         sigmoid(i), sigmoid(f), tanh(g), sigmoid(o).
//   GRU:  gates [B, 3H] in the order r, z, n; workspace [B, 5H] = r, z, n, hx and the hidden
//         gates' n part with its bias (the term r multiplies).
#include "sim.hpp"

#include <torch/library.h>

#include <optional>
#include <tuple>

namespace sim {

namespace {

// A sim tensor's values on the host in the kernel's working precision.
at::Tensor widen(const at::Tensor& t) {
  const at::ScalarType working = t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  return to_host(t).to(working);
}

bool given(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

// Host results back on the sim device in the dtype of `like`.
at::Tensor back(const at::Tensor& host, const at::Tensor& like) {
  return host.contiguous().to(like.device(), like.scalar_type());
}

void check_gates(const char* op, const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& state,
                 const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias,
                 int64_t factor) {
  TORCH_CHECK(input_gates.dim() == 2 && state.dim() == 2, op, ": gates and state must be 2-D, got ",
              input_gates.sizes(), " and ", state.sizes());
  TORCH_CHECK(input_gates.sizes() == hidden_gates.sizes(), op, ": input gates ", input_gates.sizes(),
              " and hidden gates ", hidden_gates.sizes(), " differ");
  TORCH_CHECK(input_gates.size(0) == state.size(0) && input_gates.size(1) == factor * state.size(1), op, ": gates ",
              input_gates.sizes(), " do not hold ", factor, " gates for state ", state.sizes());
  TORCH_CHECK(given(input_bias) == given(hidden_bias), op, ": give both biases or neither");
  for (const auto* bias : {&input_bias, &hidden_bias})
    if (given(*bias))
      TORCH_CHECK(bias->value().dim() == 1 && bias->value().size(0) == input_gates.size(1), op, ": bias ",
                  bias->value().sizes(), " does not match gates ", input_gates.sizes());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(const at::Tensor& input_gates,
                                                               const at::Tensor& hidden_gates, const at::Tensor& cx,
                                                               const std::optional<at::Tensor>& input_bias,
                                                               const std::optional<at::Tensor>& hidden_bias) {
  check_gates("_thnn_fused_lstm_cell", input_gates, hidden_gates, cx, input_bias, hidden_bias, 4);
  at::Tensor gates = widen(input_gates) + widen(hidden_gates);
  if (given(input_bias)) gates = gates + widen(*input_bias) + widen(*hidden_bias);
  const auto chunks = gates.chunk(4, 1);
  const at::Tensor i = at::sigmoid(chunks[0]), f = at::sigmoid(chunks[1]), g = at::tanh(chunks[2]),
                   o = at::sigmoid(chunks[3]);
  const at::Tensor cy = f * widen(cx) + i * g;
  const at::Tensor hy = o * at::tanh(cy);
  return {back(hy, cx), back(cy, cx), back(at::cat({i, f, g, o}, 1), input_gates)};
}

// Returns the gates' gradient (the same for input and hidden gates), cx's and, with biases, the
// biases' (the gates' gradient summed over the batch).
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward(const std::optional<at::Tensor>& grad_hy,
                                                                        const std::optional<at::Tensor>& grad_cy,
                                                                        const at::Tensor& cx, const at::Tensor& cy,
                                                                        const at::Tensor& workspace, bool has_bias) {
  if (!given(grad_hy) && !given(grad_cy)) return {};
  TORCH_CHECK(cx.dim() == 2 && cx.sizes() == cy.sizes() && workspace.dim() == 2 && workspace.size(0) == cx.size(0) &&
                  workspace.size(1) == 4 * cx.size(1),
              "_thnn_fused_lstm_cell_backward_impl: cx ", cx.sizes(), ", cy ", cy.sizes(), " and workspace ",
              workspace.sizes(), " do not fit together");
  const auto gates = widen(workspace).chunk(4, 1);
  const at::Tensor &i = gates[0], &f = gates[1], &g = gates[2], &o = gates[3];
  const at::Tensor tanh_cy = at::tanh(widen(cy));
  const at::Tensor dh = given(grad_hy) ? widen(*grad_hy) : at::zeros_like(tanh_cy);
  at::Tensor dc = dh * o * (1 - tanh_cy * tanh_cy);
  if (given(grad_cy)) dc = dc + widen(*grad_cy);
  const at::Tensor grad_gates = at::cat(
      {dc * g * (1 - i) * i, dc * widen(cx) * (1 - f) * f, dc * i * (1 - g * g), dh * tanh_cy * (1 - o) * o}, 1);
  const at::Tensor grad_bias = has_bias ? back(grad_gates.sum(0), workspace) : at::Tensor();
  return {back(grad_gates, workspace), back(dc * f, cx), grad_bias};
}

std::tuple<at::Tensor, at::Tensor> fused_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                  const at::Tensor& hx, const std::optional<at::Tensor>& input_bias,
                                                  const std::optional<at::Tensor>& hidden_bias) {
  check_gates("_thnn_fused_gru_cell", input_gates, hidden_gates, hx, input_bias, hidden_bias, 3);
  at::Tensor in = widen(input_gates), hid = widen(hidden_gates);
  if (given(input_bias)) {
    in = in + widen(*input_bias);
    hid = hid + widen(*hidden_bias);
  }
  const auto ic = in.chunk(3, 1), hc = hid.chunk(3, 1);
  const at::Tensor r = at::sigmoid(ic[0] + hc[0]), z = at::sigmoid(ic[1] + hc[1]);
  const at::Tensor n = at::tanh(ic[2] + r * hc[2]);
  const at::Tensor h = widen(hx);
  const at::Tensor hy = n + z * (h - n);
  return {back(hy, hx), back(at::cat({r, z, n, h, hc[2]}, 1), input_gates)};
}

// Returns the input gates', hidden gates' and hx's gradients and, with biases, the two biases'.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  TORCH_CHECK(grad_hy.dim() == 2 && workspace.dim() == 2 && workspace.size(0) == grad_hy.size(0) &&
                  workspace.size(1) == 5 * grad_hy.size(1),
              "_thnn_fused_gru_cell_backward: grad_hy ", grad_hy.sizes(), " and workspace ", workspace.sizes(),
              " do not fit together");
  const auto saved = widen(workspace).chunk(5, 1);
  const at::Tensor &r = saved[0], &z = saved[1], &n = saved[2], &h = saved[3], &hn = saved[4];
  const at::Tensor dh = widen(grad_hy);
  const at::Tensor dz = dh * (h - n) * (1 - z) * z;
  const at::Tensor dn = dh * (1 - z) * (1 - n * n);
  const at::Tensor dr = dn * hn * (1 - r) * r;
  const at::Tensor grad_input = at::cat({dr, dz, dn}, 1), grad_hidden = at::cat({dr, dz, dn * r}, 1);
  at::Tensor grad_input_bias, grad_hidden_bias;
  if (has_bias) {
    grad_input_bias = back(grad_input.sum(0), workspace);
    grad_hidden_bias = back(grad_hidden.sum(0), workspace);
  }
  return {back(grad_input, workspace), back(grad_hidden, workspace), back(dh * z, grad_hy), grad_input_bias,
          grad_hidden_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", fused_lstm_cell);
  m.impl("_thnn_fused_lstm_cell_backward_impl", fused_lstm_cell_backward);
  m.impl("_thnn_fused_gru_cell", fused_gru_cell);
  m.impl("_thnn_fused_gru_cell_backward", fused_gru_cell_backward);
}

}  // namespace sim
