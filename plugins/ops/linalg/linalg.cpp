// Linear algebra family: matmul-shaped ops (transposed operands are the classic trap) and
// factorisations, compared through quantities that do not depend on sign or order choices.
#include <mpscheck/op.hpp>

#include <torch/version.h>

using namespace mpscheck::op;

namespace {

using A = const Tensors&;

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

// clang-format off
MPSCHECK_CATALOG(linalg_cases) {
  // float32 (and integers where the op takes them): reduced precision is exercised by --target
  // cpu:bfloat16/float16 on these cases (with the table's reduced tolerance, long bf16 dot products
  // here exceed atol 3e-2 even on CPU).
  Family matmul(catalog, "linalg");
  matmul.tolerance("matmul");

  // ----- matmul-likes -----
  matmul.op("linear", {Arg::randn("x", {32, 64}), Arg::randn("weight", {48, 64}), Arg::randn("bias", {48})},
            [](A a) { return at::linear(a[0], a[1], a[2]); }, "torch.nn.functional.linear(x, weight, bias)")
      .variants({Variant::contiguous(), Variant::transposed("weight"), Variant::sliced("x")}).add();
  matmul.op("linear_3d_nobias", {Arg::randn("x", {4, 16, 64}), Arg::randn("weight", {32, 64})},
            [](A a) { return at::linear(a[0], a[1]); }, "torch.nn.functional.linear(x, weight)")
      .variants({Variant::contiguous(), Variant::transposed("x"), Variant::expanded("x")}).add();
  matmul.op("addmm", {Arg::randn("bias", {32, 48}), Arg::randn("a", {32, 64}), Arg::randn("b", {64, 48})},
            [](A a) { return at::addmm(a[0], a[1], a[2]); }, "torch.addmm(bias, a, b)")
      .variants({Variant::contiguous(), Variant::transposed("a"), transposed_arg("b")}).add();
  matmul.op("addmm_scaled_broadcast", {Arg::randn("bias", {48}), Arg::randn("a", {32, 64}), Arg::randn("b", {64, 48})},
            [](A a) { return at::addmm(a[0], a[1], a[2], 0.5, 2.0); }, "torch.addmm(bias, a, b, beta=0.5, alpha=2.0)")
      .variants({Variant::contiguous(), Variant::sliced("a")}).add();
  matmul.op("mm", {Arg::randn("a", {24, 40}), Arg::randn("b", {40, 16})}, [](A a) { return at::mm(a[0], a[1]); },
            "torch.mm(a, b)")
      .add(dtypes::f32_ints, {Variant::contiguous(), Variant::transposed("a"), transposed_arg("b")});
  matmul.op("matmul_batched", {Arg::randn("a", {4, 16, 32}), Arg::randn("b", {4, 32, 24})},
            [](A a) { return at::matmul(a[0], a[1]); }, "torch.matmul(a, b)")
      .variants({Variant::contiguous(), Variant::transposed("a"), transposed_arg("b"), Variant::expanded("a")}).add();
  matmul.op("matmul_broadcast", {Arg::randn("a", {2, 1, 16, 32}), Arg::randn("b", {3, 32, 8})},
            [](A a) { return at::matmul(a[0], a[1]); }, "torch.matmul(a, b)")
      .variants({Variant::contiguous(), transposed_arg("b"), Variant::sliced("a")}).add();
  matmul.op("matmul_matrix_vector", {Arg::randn("a", {3, 16, 32}), Arg::randn("v", {32})},
            [](A a) { return at::matmul(a[0], a[1]); }, "torch.matmul(a, v)")
      .variants({Variant::contiguous(), Variant::transposed("a"), Variant::sliced("v")}).add();
  matmul.op("bmm", {Arg::randn("a", {8, 16, 32}), Arg::randn("b", {8, 32, 16})}, [](A a) { return at::bmm(a[0], a[1]); },
            "torch.bmm(a, b)")
      .add(dtypes::f32_ints,
           {Variant::contiguous(), Variant::transposed("a"), transposed_arg("b"), Variant::expanded("b")});
  matmul.op("baddbmm", {Arg::randn("bias", {8, 16, 16}), Arg::randn("a", {8, 16, 32}), Arg::randn("b", {8, 32, 16})},
            [](A a) { return at::baddbmm(a[0], a[1], a[2], 0.5, 0.25); },
            "torch.baddbmm(bias, a, b, beta=0.5, alpha=0.25)")
      .variants({Variant::contiguous(), Variant::transposed("a"), Variant::expanded("bias")}).add();
  matmul.op("einsum_bmm", {Arg::randn("a", {4, 12, 20}), Arg::randn("b", {4, 20, 10})},
            [](A a) { return at::einsum("bij,bjk->bik", {a[0], a[1]}); }, "torch.einsum('bij,bjk->bik', a, b)")
      .variants({Variant::contiguous(), Variant::transposed("a")}).add();
  matmul.op("einsum_attention_scores", {Arg::randn("q", {2, 4, 10, 16}), Arg::randn("k", {2, 4, 12, 16})},
            [](A a) { return at::einsum("bhqd,bhkd->bhqk", {a[0], a[1]}); }, "torch.einsum('bhqd,bhkd->bhqk', q, k)")
      .variants({Variant::contiguous(), Variant::transposed("k"), Variant::channels_last("q")}).add();
  matmul.op("einsum_trace_outer", {Arg::randn("a", {8, 8}), Arg::randn("v", {6})},
            [](A a) { return at::einsum("ii,j->j", {a[0], a[1]}); }, "torch.einsum('ii,j->j', a, v)")
      .variants({Variant::contiguous(), Variant::transposed("a")}).add();
  matmul.op("mv", {Arg::randn("a", {32, 48}), Arg::randn("v", {48})}, [](A a) { return at::mv(a[0], a[1]); },
            "torch.mv(a, v)")
      .add(dtypes::f32_ints, {Variant::contiguous(), Variant::transposed("a"), Variant::sliced("v")});
  matmul.op("addmv", {Arg::randn("bias", {32}), Arg::randn("a", {32, 48}), Arg::randn("v", {48})},
            [](A a) { return at::addmv(a[0], a[1], a[2], 0.5, 2.0); }, "torch.addmv(bias, a, v, beta=0.5, alpha=2.0)")
      .variants({Variant::contiguous(), Variant::transposed("a")}).add();
  matmul.op("outer", {Arg::randn("u", {24}), Arg::randn("v", {40})}, [](A a) { return at::outer(a[0], a[1]); },
            "torch.outer(u, v)")
      .add(dtypes::f32_ints, {Variant::contiguous(), Variant::sliced("v")});
  matmul.op("dot", {Arg::randn("u", {500}), Arg::randn("v", {500})}, [](A a) { return at::dot(a[0], a[1]); },
            "torch.dot(u, v)")
      .add(dtypes::f32_ints, {Variant::contiguous(), Variant::sliced("u")});

  // ----- factorisations (float32 only: CPU LAPACK has no reduced-precision kernels) -----
  Family linalg(catalog, "linalg");
  linalg.variants({Variant::contiguous(), Variant::transposed("a")});
  using T = const at::Tensor&;
  linalg.op("inv", {Arg::randn("a", {4, 16, 16})}, [](T a) { return at::linalg_inv(shifted(a)); },
            "torch.linalg.inv" + shifted_py("a", 16)).add();
  linalg.op("solve", {Arg::randn("a", {4, 16, 16}), Arg::randn("b", {4, 16, 3})},
            [](A a) { return at::linalg_solve(shifted(a[0]), a[1]); }, "torch.linalg.solve(" + shifted_py("a", 16) + ", b)")
      .variants({Variant::contiguous(), Variant::transposed("a"), Variant::sliced("b")}).add();
  linalg.op("cholesky", {Arg::randn("a", {3, 12, 12})},
            [](T a) { return at::linalg_cholesky(shifted(at::matmul(a, a.transpose(-2, -1)))); },
            "torch.linalg.cholesky" + shifted_py("(a @ a.transpose(-2, -1))", 12)).add();
  // Q and R are unique only up to the signs of Q's columns / R's rows: compare QR and |Q|, |R|.
  linalg.op("qr_invariants", {Arg::randn("a", {3, 12, 8})},
            [](T a) {
              auto [q, r] = at::linalg_qr(a);
              return Tensors{at::matmul(q, r), q.abs(), r.abs()};
            },
            "(lambda qr: (qr[0] @ qr[1], qr[0].abs(), qr[1].abs()))(torch.linalg.qr(a))").add();
  // Singular vectors are unique only up to sign: compare the values and the reconstruction.
  linalg.op("svdvals", {Arg::randn("a", {3, 12, 8})}, [](T a) { return at::linalg_svdvals(a); },
            "torch.linalg.svdvals(a)").add();
  linalg.op("svd_reconstruction", {Arg::randn("a", {2, 10, 6})},
            [](T a) {
              auto [u, s, vh] = at::linalg_svd(a, false);
              return at::matmul(u * s.unsqueeze(-2), vh);
            },
            "(lambda usv: (usv[0] * usv[1].unsqueeze(-2)) @ usv[2])(torch.linalg.svd(a, full_matrices=False))")
      .variants({Variant::contiguous(), Variant::sliced("a")}).add();
  // Eigenvectors are sign-ambiguous: compare eigenvalues of the symmetrised matrix.
  linalg.op("eigvalsh", {Arg::randn("a", {3, 12, 12})}, [](T a) { return at::linalg_eigvalsh(a + a.transpose(-2, -1)); },
            "torch.linalg.eigvalsh(a + a.transpose(-2, -1))")
      .variants({Variant::contiguous(), Variant::sliced("a")}).add();
  linalg.op("det", {Arg::randn("a", {4, 8, 8})}, [](T a) { return at::linalg_det(a); }, "torch.linalg.det(a)").add();
  linalg.op("slogdet", {Arg::randn("a", {4, 10, 10})},
            [](T a) {
              auto [sign, logabsdet] = at::linalg_slogdet(a);
              return Tensors{sign, logabsdet};
            },
            "tuple(torch.linalg.slogdet(a))").add();
  linalg.op("vector_norm", {Arg::randn("x", {16, 64})},
            [](T x) {
              static const std::vector<int64_t> last{-1};
              return at::linalg_vector_norm(x, 2, at::IntArrayRef(last));
            },
            "torch.linalg.vector_norm(x, 2, dim=-1)")
      .tolerance("reduction").variants({Variant::contiguous(), Variant::transposed("x"), Variant::sliced("x")}).add();
  linalg.op("vector_norm_inf", {Arg::randn("x", {16, 64})}, [](T x) { return at::linalg_vector_norm(x, INFINITY); },
            "torch.linalg.vector_norm(x, float('inf'))")
      .tolerance("reduction").variants({Variant::contiguous(), Variant::transposed("x")}).add();
  linalg.op("matrix_norm_fro", {Arg::randn("a", {4, 12, 20})}, [](T a) { return at::linalg_matrix_norm(a, "fro"); },
            "torch.linalg.matrix_norm(a, 'fro')").tolerance("reduction").add();
  linalg.op("matrix_norm_nuclear", {Arg::randn("a", {3, 10, 6})}, [](T a) { return at::linalg_matrix_norm(a, "nuc"); },
            "torch.linalg.matrix_norm(a, 'nuc')").add();

  // ----- large: a long reduction dimension and a big output -----
  matmul.op("mm_long_k", {Arg::randn("a", {8, 1 << 20}), Arg::randn("b", {1 << 20, 8})},
            [](A a) { return at::mm(a[0], a[1]); }, "torch.mm(a, b)").large().add();
  matmul.op("linear_big_output", {Arg::randn("x", {4096, 64}), Arg::randn("weight", {4200, 64})},
            [](A a) { return at::linear(a[0], a[1]); }, "torch.nn.functional.linear(x, weight)").large().add();
}
// clang-format on

MPSCHECK_PLUGIN("ops-linalg", "0.1.0")
