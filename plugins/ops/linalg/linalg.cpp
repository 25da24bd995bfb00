// Linear algebra family: matmul-shaped ops (transposed operands are the classic trap) and
// factorisations, compared through quantities that do not depend on sign or order choices.
#include <mpscheck/op.hpp>

#include <torch/version.h>

using namespace mpscheck::op;

namespace {

OpDef linalg(std::string op, std::vector<Arg> args, OpFn fn, std::string python, std::string tolerance,
             bool differentiable = true, std::vector<std::string> tags = {}) {
  return OpDef{"linalg", std::move(op), std::move(args), std::move(fn), std::move(python), differentiable,
               std::move(tolerance), std::move(tags), {}};
}

// Reduced precision is exercised by --target cpu:bfloat16/float16 on the float32 cases: with the
// table's reduced tolerance, long bf16 dot products here exceed atol 3e-2 even on CPU (see report).
std::vector<c10::ScalarType> model_dtypes() { return {c10::kFloat}; }

Variant transposed_arg(const std::string& arg) { return Variant::of("transposed_" + arg, Layout::Transposed, arg); }

// n * I added to a random matrix: diagonally dominant enough to be well conditioned.
at::Tensor shifted(const at::Tensor& a) {
  const int64_t n = a.size(-1);
  return a + at::eye(n, a.options()) * static_cast<double>(n);
}
std::string shifted_py(const std::string& a, int64_t n) {
  return "(" + a + " + torch.eye(" + std::to_string(n) + ", dtype=" + a + ".dtype, device=" + a + ".device) * " +
         std::to_string(n) + ".0)";
}

}  // namespace

MPSCHECK_CATALOG(linalg_cases) {
  const std::vector<c10::ScalarType> f32{c10::kFloat};
  const auto models = model_dtypes();
  const std::vector<c10::ScalarType> with_ints{c10::kFloat, c10::kLong, c10::kInt};
  const Variant large{"large", [](std::vector<Arg>&) {}};

  // ----- matmul-likes -----
  add_op(catalog,
         linalg("linear", {Arg::randn("x", {32, 64}), Arg::randn("weight", {48, 64}), Arg::randn("bias", {48})},
                [](const Tensors& a) { return Tensors{at::linear(a[0], a[1], a[2])}; },
                "torch.nn.functional.linear(x, weight, bias)", "matmul"),
         models, {Variant::contiguous(), Variant::transposed("weight"), Variant::sliced("x")});
  add_op(catalog,
         linalg("linear_3d_nobias", {Arg::randn("x", {4, 16, 64}), Arg::randn("weight", {32, 64})},
                [](const Tensors& a) { return Tensors{at::linear(a[0], a[1])}; },
                "torch.nn.functional.linear(x, weight)", "matmul"),
         models, {Variant::contiguous(), Variant::transposed("x"), Variant::expanded("x")});
  add_op(catalog,
         linalg("addmm", {Arg::randn("bias", {32, 48}), Arg::randn("a", {32, 64}), Arg::randn("b", {64, 48})},
                [](const Tensors& a) { return Tensors{at::addmm(a[0], a[1], a[2])}; }, "torch.addmm(bias, a, b)",
                "matmul"),
         models, {Variant::contiguous(), Variant::transposed("a"), transposed_arg("b")});
  add_op(catalog,
         linalg("addmm_scaled_broadcast",
                {Arg::randn("bias", {48}), Arg::randn("a", {32, 64}), Arg::randn("b", {64, 48})},
                [](const Tensors& a) { return Tensors{at::addmm(a[0], a[1], a[2], 0.5, 2.0)}; },
                "torch.addmm(bias, a, b, beta=0.5, alpha=2.0)", "matmul"),
         f32, {Variant::contiguous(), Variant::sliced("a")});
  add_op(catalog,
         linalg("mm", {Arg::randn("a", {24, 40}), Arg::randn("b", {40, 16})},
                [](const Tensors& a) { return Tensors{at::mm(a[0], a[1])}; }, "torch.mm(a, b)", "matmul"),
         with_ints, {Variant::contiguous(), Variant::transposed("a"), transposed_arg("b")});
  add_op(catalog,
         linalg("matmul_batched", {Arg::randn("a", {4, 16, 32}), Arg::randn("b", {4, 32, 24})},
                [](const Tensors& a) { return Tensors{at::matmul(a[0], a[1])}; }, "torch.matmul(a, b)", "matmul"),
         models, {Variant::contiguous(), Variant::transposed("a"), transposed_arg("b"), Variant::expanded("a")});
  add_op(catalog,
         linalg("matmul_broadcast", {Arg::randn("a", {2, 1, 16, 32}), Arg::randn("b", {3, 32, 8})},
                [](const Tensors& a) { return Tensors{at::matmul(a[0], a[1])}; }, "torch.matmul(a, b)", "matmul"),
         models, {Variant::contiguous(), transposed_arg("b"), Variant::sliced("a")});
  add_op(catalog,
         linalg("matmul_matrix_vector", {Arg::randn("a", {3, 16, 32}), Arg::randn("v", {32})},
                [](const Tensors& a) { return Tensors{at::matmul(a[0], a[1])}; }, "torch.matmul(a, v)", "matmul"),
         f32, {Variant::contiguous(), Variant::transposed("a"), Variant::sliced("v")});
  add_op(catalog,
         linalg("bmm", {Arg::randn("a", {8, 16, 32}), Arg::randn("b", {8, 32, 16})},
                [](const Tensors& a) { return Tensors{at::bmm(a[0], a[1])}; }, "torch.bmm(a, b)", "matmul"),
         with_ints, {Variant::contiguous(), Variant::transposed("a"), transposed_arg("b"), Variant::expanded("b")});
  add_op(catalog,
         linalg("baddbmm",
                {Arg::randn("bias", {8, 16, 16}), Arg::randn("a", {8, 16, 32}), Arg::randn("b", {8, 32, 16})},
                [](const Tensors& a) { return Tensors{at::baddbmm(a[0], a[1], a[2], 0.5, 0.25)}; },
                "torch.baddbmm(bias, a, b, beta=0.5, alpha=0.25)", "matmul"),
         models, {Variant::contiguous(), Variant::transposed("a"), Variant::expanded("bias")});
  add_op(catalog,
         linalg("einsum_bmm", {Arg::randn("a", {4, 12, 20}), Arg::randn("b", {4, 20, 10})},
                [](const Tensors& a) { return Tensors{at::einsum("bij,bjk->bik", {a[0], a[1]})}; },
                "torch.einsum('bij,bjk->bik', a, b)", "matmul"),
         models, {Variant::contiguous(), Variant::transposed("a")});
  add_op(catalog,
         linalg("einsum_attention_scores", {Arg::randn("q", {2, 4, 10, 16}), Arg::randn("k", {2, 4, 12, 16})},
                [](const Tensors& a) { return Tensors{at::einsum("bhqd,bhkd->bhqk", {a[0], a[1]})}; },
                "torch.einsum('bhqd,bhkd->bhqk', q, k)", "matmul"),
         f32, {Variant::contiguous(), Variant::transposed("k"), Variant::channels_last("q")});
  add_op(catalog,
         linalg("einsum_trace_outer", {Arg::randn("a", {8, 8}), Arg::randn("v", {6})},
                [](const Tensors& a) { return Tensors{at::einsum("ii,j->j", {a[0], a[1]})}; },
                "torch.einsum('ii,j->j', a, v)", "matmul"),
         f32, {Variant::contiguous(), Variant::transposed("a")});
  add_op(catalog,
         linalg("mv", {Arg::randn("a", {32, 48}), Arg::randn("v", {48})},
                [](const Tensors& a) { return Tensors{at::mv(a[0], a[1])}; }, "torch.mv(a, v)", "matmul"),
         with_ints, {Variant::contiguous(), Variant::transposed("a"), Variant::sliced("v")});
  add_op(catalog,
         linalg("addmv", {Arg::randn("bias", {32}), Arg::randn("a", {32, 48}), Arg::randn("v", {48})},
                [](const Tensors& a) { return Tensors{at::addmv(a[0], a[1], a[2], 0.5, 2.0)}; },
                "torch.addmv(bias, a, v, beta=0.5, alpha=2.0)", "matmul"),
         f32, {Variant::contiguous(), Variant::transposed("a")});
  add_op(catalog,
         linalg("outer", {Arg::randn("u", {24}), Arg::randn("v", {40})},
                [](const Tensors& a) { return Tensors{at::outer(a[0], a[1])}; }, "torch.outer(u, v)", "matmul"),
         with_ints, {Variant::contiguous(), Variant::sliced("v")});
  add_op(catalog,
         linalg("dot", {Arg::randn("u", {500}), Arg::randn("v", {500})},
                [](const Tensors& a) { return Tensors{at::dot(a[0], a[1])}; }, "torch.dot(u, v)", "matmul"),
         with_ints, {Variant::contiguous(), Variant::sliced("u")});

  // ----- factorisations (float32 only: CPU LAPACK has no reduced-precision kernels) -----
  add_op(catalog,
         linalg("inv", {Arg::randn("a", {4, 16, 16})},
                [](const Tensors& a) { return Tensors{at::linalg_inv(shifted(a[0]))}; },
                "torch.linalg.inv" + shifted_py("a", 16), "linalg"),
         f32, {Variant::contiguous(), Variant::transposed("a")});
  add_op(catalog,
         linalg("solve", {Arg::randn("a", {4, 16, 16}), Arg::randn("b", {4, 16, 3})},
                [](const Tensors& a) { return Tensors{at::linalg_solve(shifted(a[0]), a[1])}; },
                "torch.linalg.solve(" + shifted_py("a", 16) + ", b)", "linalg"),
         f32, {Variant::contiguous(), Variant::transposed("a"), Variant::sliced("b")});
  add_op(catalog,
         linalg("cholesky", {Arg::randn("a", {3, 12, 12})},
                [](const Tensors& a) {
                  return Tensors{at::linalg_cholesky(shifted(at::matmul(a[0], a[0].transpose(-2, -1))))};
                },
                "torch.linalg.cholesky" + shifted_py("(a @ a.transpose(-2, -1))", 12), "linalg"),
         f32, {Variant::contiguous(), Variant::transposed("a")});
  // Q and R are unique only up to the signs of Q's columns / R's rows: compare QR and |Q|, |R|.
  add_op(catalog,
         linalg("qr_invariants", {Arg::randn("a", {3, 12, 8})},
                [](const Tensors& a) {
                  auto [q, r] = at::linalg_qr(a[0]);
                  return Tensors{at::matmul(q, r), q.abs(), r.abs()};
                },
                "(lambda qr: (qr[0] @ qr[1], qr[0].abs(), qr[1].abs()))(torch.linalg.qr(a))", "linalg"),
         f32, {Variant::contiguous(), Variant::transposed("a")});
  // Singular vectors are unique only up to sign: compare the values and the reconstruction.
  add_op(catalog,
         linalg("svdvals", {Arg::randn("a", {3, 12, 8})},
                [](const Tensors& a) { return Tensors{at::linalg_svdvals(a[0])}; }, "torch.linalg.svdvals(a)",
                "linalg"),
         f32, {Variant::contiguous(), Variant::transposed("a")});
  add_op(catalog,
         linalg("svd_reconstruction", {Arg::randn("a", {2, 10, 6})},
                [](const Tensors& a) {
                  auto [u, s, vh] = at::linalg_svd(a[0], false);
                  return Tensors{at::matmul(u * s.unsqueeze(-2), vh)};
                },
                "(lambda usv: (usv[0] * usv[1].unsqueeze(-2)) @ usv[2])(torch.linalg.svd(a, full_matrices=False))",
                "linalg"),
         f32, {Variant::contiguous(), Variant::sliced("a")});
  // Eigenvectors are sign-ambiguous: compare eigenvalues of the symmetrised matrix.
  add_op(catalog,
         linalg("eigvalsh", {Arg::randn("a", {3, 12, 12})},
                [](const Tensors& a) { return Tensors{at::linalg_eigvalsh(a[0] + a[0].transpose(-2, -1))}; },
                "torch.linalg.eigvalsh(a + a.transpose(-2, -1))", "linalg"),
         f32, {Variant::contiguous(), Variant::sliced("a")});
  add_op(catalog,
         linalg("det", {Arg::randn("a", {4, 8, 8})},
                [](const Tensors& a) { return Tensors{at::linalg_det(a[0])}; }, "torch.linalg.det(a)", "linalg"),
         f32, {Variant::contiguous(), Variant::transposed("a")});
  add_op(catalog,
         linalg("slogdet", {Arg::randn("a", {4, 10, 10})},
                [](const Tensors& a) {
                  auto [sign, logabsdet] = at::linalg_slogdet(a[0]);
                  return Tensors{sign, logabsdet};
                },
                "tuple(torch.linalg.slogdet(a))", "linalg"),
         f32, {Variant::contiguous(), Variant::transposed("a")});
  add_op(catalog,
         linalg("vector_norm", {Arg::randn("x", {16, 64})},
                [](const Tensors& a) {
                  static const std::vector<int64_t> last{-1};
                  return Tensors{at::linalg_vector_norm(a[0], 2, at::IntArrayRef(last))};
                },
                "torch.linalg.vector_norm(x, 2, dim=-1)", "reduction"),
         models, {Variant::contiguous(), Variant::transposed("x"), Variant::sliced("x")});
  add_op(catalog,
         linalg("vector_norm_inf", {Arg::randn("x", {16, 64})},
                [](const Tensors& a) { return Tensors{at::linalg_vector_norm(a[0], INFINITY)}; },
                "torch.linalg.vector_norm(x, float('inf'))", "reduction"),
         f32, {Variant::contiguous(), Variant::transposed("x")});
  add_op(catalog,
         linalg("matrix_norm_fro", {Arg::randn("a", {4, 12, 20})},
                [](const Tensors& a) { return Tensors{at::linalg_matrix_norm(a[0], "fro")}; },
                "torch.linalg.matrix_norm(a, 'fro')", "reduction"),
         models, {Variant::contiguous(), Variant::transposed("a")});
  add_op(catalog,
         linalg("matrix_norm_nuclear", {Arg::randn("a", {3, 10, 6})},
                [](const Tensors& a) { return Tensors{at::linalg_matrix_norm(a[0], "nuc")}; },
                "torch.linalg.matrix_norm(a, 'nuc')", "linalg"),
         f32, {Variant::contiguous(), Variant::transposed("a")});

  // ----- large: a long reduction dimension and a big output -----
  add_op(catalog,
         linalg("mm_long_k", {Arg::randn("a", {8, 1 << 20}), Arg::randn("b", {1 << 20, 8})},
                [](const Tensors& a) { return Tensors{at::mm(a[0], a[1])}; }, "torch.mm(a, b)", "matmul", true,
                {"large"}),
         f32, {large});
  add_op(catalog,
         linalg("linear_big_output", {Arg::randn("x", {4096, 64}), Arg::randn("weight", {4200, 64})},
                [](const Tensors& a) { return Tensors{at::linear(a[0], a[1])}; },
                "torch.nn.functional.linear(x, weight)", "matmul", true, {"large"}),
         f32, {large});
}

MPSCHECK_PLUGIN("ops-linalg", "0.1.0")
