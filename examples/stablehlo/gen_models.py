#!/usr/bin/python3
"""Writes the two example "bring your own model" StableHLO modules, as exporters print them.

  /usr/bin/python3 examples/stablehlo/gen_models.py [--out DIR] [--style full|f64|compat]
                                                     [--batch B] [--seed S]

writes into DIR (default: this script's folder), deterministically:
  nanogpt_2l.mlir          a 2-layer nanoGPT (token + position embeddings, pre-LayerNorm blocks,
                           causal 4-head attention with one fused qkv Linear, ReLU 4x MLP, final
                           LayerNorm, untied lm_head with bias, mean cross-entropy as torch-mlir
                           writes F.cross_entropy: a gather of (row, target) pairs, ignore_index -100)
  nanogpt_2l.names.txt     its parameter names, one per non-data argument, in argument order
  llama_2l.mlir            a 2-layer Llama (RMSNorm, RoPE on q and k from cos/sin tables passed
                           as arguments, causal 4-head attention, SwiGLU MLP, final RMSNorm,
                           untied output projection, mean cross-entropy)
  llama_2l.safetensors     initial values of every non-data argument of llama_2l.mlir, in
                           argument order: the parameters, then the frozen rope.cos / rope.sin
  llama_2l_forward.mlir    the same Llama exported forward-only: @main(params..., tokens) ->
                           logits [B, T, V], no loss (a job names it as model.logits)

Both are `func.func @main(params..., tokens: tensor<BxTxi64>, targets: tensor<BxTxi64>) ->
tensor<f32>` (the loss), in StableHLO's pretty syntax with the habits of real exports: the
nanoGPT module reads like torch-mlir output (transposed weights, reshapes around 2-D matmuls,
generic-form gather and reduce regions), the Llama one like a JAX export (dot_general on 3-D
operands, `reducer` regions, jax.result_info). PyTorch models of the same architectures, written
independently, are in models_torch.py; tests/libs/models/stablehlo_torch_parity_test.cc checks
loss and gradients against them.

--style picks how much of what torch exports also contain is written:
  full    (the default) scale and epsilon constants as tensor<f64> converted to f32 (PCP folds
          them in double, passes.h); the causal mask as torch writes masked_fill(~tril) (nanogpt:
          stablehlo.not of the kept positions) and as jnp.where(row >= col, ...) (llama)
  f64     the f64 constants, the causal mask as one comparison of the masked positions
  compat  f32 constants only, for parsers without f64
"""
import argparse
import math
import os
import struct

import numpy as np

import safetensors_io

VOCAB = 65   # tiny-shakespeare characters
BLOCK = 64   # T
BATCH = 12   # B
N_EMBD = 64
N_HEAD = 4
N_LAYER = 2
LLAMA_HIDDEN = 192  # int(2 * 4 * 64 / 3) = 170 rounded up to a multiple of 32, as Llama does


def tensor_type(shape, dtype="f32"):
    return "tensor<" + "".join("%dx" % d for d in shape) + dtype + ">"


def float_literal(value, dtype="f32"):
    """A splat literal as MLIR prints it: %.6e when that reads back exactly, else the hex bits
    (integers in decimal)."""
    if dtype in ("i32", "i64"):
        return "%d" % value
    if dtype == "f64":
        text = "%.6e" % value
        if not math.isinf(value) and float(text) == value:
            return text
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    f32 = float(np.float32(value))
    text = "%.6e" % f32
    if not math.isinf(f32) and float(np.float32(float(text))) == f32:
        return text
    return "0x%08X" % struct.unpack("<I", struct.pack("<f", f32))[0]


class Emitter:
    """Builds one function body: numbered SSA values, their types, and #loc aliases."""

    def __init__(self, source_file, style):
        self.lines = []
        self.types = {}
        self.next_value = 0
        self.next_cst = 0
        self.locs = []  # (alias number, text)
        self.source_file = source_file
        self.style = style
        self.line_no = 10
        self.scope = "model"

    # ---- bookkeeping --------------------------------------------------------------------
    def loc(self):
        """A new #locN alias for the op being written: a source line inside the current scope."""
        self.line_no += 1
        n = len(self.locs) + 2  # #loc and #loc1 are the module's own
        self.locs.append((n, 'loc("%s"("%s":%d:8))' % (self.scope, self.source_file, self.line_no)))
        return "loc(#loc%d)" % n

    def value(self, shape, dtype="f32"):
        name = "%%%d" % self.next_value
        self.next_value += 1
        self.types[name] = (tuple(shape), dtype)
        return name

    def ty(self, v):
        shape, dtype = self.types[v]
        return tensor_type(shape, dtype)

    def shape(self, v):
        return self.types[v][0]

    def emit(self, text):
        self.lines.append("    " + text)

    def arg(self, index, shape, dtype="f32"):
        name = "%%arg%d" % index
        self.types[name] = (tuple(shape), dtype)
        return name

    # ---- constants ----------------------------------------------------------------------
    def splat(self, value, dtype="f32", shape=()):
        name = "%%cst_%d" % (self.next_cst - 1) if self.next_cst else "%cst"
        self.next_cst += 1
        self.types[name] = (tuple(shape), dtype)
        self.emit("%s = stablehlo.constant dense<%s> : %s" % (name, float_literal(value, dtype), self.ty(name)))
        return name

    def scalar(self, value):
        """An f32 scalar constant; in the full style spelled as torch does: an f64 literal converted."""
        if self.style in ("full", "f64"):
            return self.convert(self.splat(value, "f64"), "f32")
        return self.splat(value)

    # ---- ops ----------------------------------------------------------------------------
    def elementwise(self, op, *xs):
        r = self.value(self.shape(xs[0]), self.types[xs[0]][1])
        self.emit("%s = stablehlo.%s %s : %s %s" % (r, op, ", ".join(xs), self.ty(r), self.loc()))
        return r

    def add(self, a, b): return self.elementwise("add", a, b)
    def sub(self, a, b): return self.elementwise("subtract", a, b)
    def mul(self, a, b): return self.elementwise("multiply", a, b)
    def div(self, a, b): return self.elementwise("divide", a, b)
    def maximum(self, a, b): return self.elementwise("maximum", a, b)

    def unary(self, op, x):
        return self.elementwise(op, x)

    def convert(self, x, dtype):
        r = self.value(self.shape(x), dtype)
        self.emit("%s = stablehlo.convert %s : (%s) -> %s %s" % (r, x, self.ty(x), self.ty(r), self.loc()))
        return r

    def broadcast(self, x, shape, dims):
        r = self.value(shape, self.types[x][1])
        self.emit("%s = stablehlo.broadcast_in_dim %s, dims = [%s] : (%s) -> %s" %
                  (r, x, ", ".join(map(str, dims)), self.ty(x), self.ty(r)))
        return r

    def reshape(self, x, shape):
        r = self.value(shape, self.types[x][1])
        self.emit("%s = stablehlo.reshape %s : (%s) -> %s %s" % (r, x, self.ty(x), self.ty(r), self.loc()))
        return r

    def transpose(self, x, perm):
        shape = [self.shape(x)[p] for p in perm]
        r = self.value(shape, self.types[x][1])
        self.emit("%s = stablehlo.transpose %s, dims = [%s] : (%s) -> %s %s" %
                  (r, x, ", ".join(map(str, perm)), self.ty(x), self.ty(r), self.loc()))
        return r

    def slice(self, x, ranges, with_stride=False):
        shape = [hi - lo for lo, hi in ranges]
        r = self.value(shape, self.types[x][1])
        spans = ", ".join("%d:%d%s" % (lo, hi, ":1" if with_stride else "") for lo, hi in ranges)
        self.emit("%s = stablehlo.slice %s [%s] : (%s) -> %s %s" % (r, x, spans, self.ty(x), self.ty(r), self.loc()))
        return r

    def concatenate(self, xs, dim):
        shape = list(self.shape(xs[0]))
        shape[dim] = sum(self.shape(x)[dim] for x in xs)
        r = self.value(shape, self.types[xs[0]][1])
        self.emit("%s = stablehlo.concatenate %s, dim = %d : (%s) -> %s %s" %
                  (r, ", ".join(xs), dim, ", ".join(self.ty(x) for x in xs), self.ty(r), self.loc()))
        return r

    def iota(self, shape, dim, dtype):
        r = self.value(shape, dtype)
        self.emit("%s = stablehlo.iota dim = %d : %s %s" % (r, dim, self.ty(r), self.loc()))
        return r

    def compare(self, direction, a, b, kind):
        r = self.value(self.shape(a), "i1")
        self.emit("%s = stablehlo.compare  %s, %s, %s,  %s : (%s, %s) -> %s %s" %
                  (r, direction, a, b, kind, self.ty(a), self.ty(b), self.ty(r), self.loc()))
        return r

    def select(self, pred, a, b):
        r = self.value(self.shape(a))
        self.emit("%s = stablehlo.select %s, %s, %s : %s, %s %s" % (r, pred, a, b, self.ty(pred), self.ty(r), self.loc()))
        return r

    def dot(self, a, b, batch=((), ()), contract=((), ()), precision=False):
        sa, sb = self.shape(a), self.shape(b)
        shape = [sa[d] for d in batch[0]]
        shape += [d for i, d in enumerate(sa) if i not in batch[0] and i not in contract[0]]
        shape += [d for i, d in enumerate(sb) if i not in batch[1] and i not in contract[1]]
        r = self.value(shape)
        lst = lambda ds: "[" + ", ".join(map(str, ds)) + "]"
        parts = []
        if batch[0]:
            parts.append("batching_dims = %s x %s" % (lst(batch[0]), lst(batch[1])))
        parts.append("contracting_dims = %s x %s" % (lst(contract[0]), lst(contract[1])))
        if precision:
            parts.append("precision = [DEFAULT, DEFAULT]")
        self.emit("%s = stablehlo.dot_general %s, %s, %s : (%s, %s) -> %s %s" %
                  (r, a, b, ", ".join(parts), self.ty(a), self.ty(b), self.ty(r), self.loc()))
        return r

    def reduce(self, x, init, kind, dims, form="applies"):
        """kind: add | maximum. form: applies (one line), reducer (JAX's region), generic (^bb0)."""
        shape = [d for i, d in enumerate(self.shape(x)) if i not in dims]
        r = self.value(shape)
        dl = ", ".join(map(str, dims))
        sig = "(%s, tensor<f32>) -> %s" % (self.ty(x), self.ty(r))
        loc = self.loc()
        if form == "applies":
            self.emit("%s = stablehlo.reduce(%s init: %s) applies stablehlo.%s across dimensions = [%s] : %s %s" %
                      (r, x, init, kind, dl, sig, loc))
            return r
        # MLIR numbers a region's arguments after the function's and its values after the
        # function's last value; finish() fills these in once both counts are known.
        a, b, m = "@REGION_ARG0@", "@REGION_ARG1@", "@REGION_VALUE@"
        if form == "reducer":
            self.emit("%s = stablehlo.reduce(%s init: %s) across dimensions = [%s] : %s" % (r, x, init, dl, sig))
            self.emit(" reducer(%s: tensor<f32> loc(unknown), %s: tensor<f32> loc(unknown))  {" % (a, b))
            self.emit("  %s = stablehlo.%s %s, %s : tensor<f32> %s" % (m, kind, a, b, loc))
            self.emit("  stablehlo.return %s : tensor<f32> %s" % (m, loc))
            self.emit("} %s" % loc)
            return r
        self.emit('%s = "stablehlo.reduce"(%s, %s) ({' % (r, x, init))
        self.emit("^bb0(%s: tensor<f32>, %s: tensor<f32>):" % (a, b))
        self.emit("  %s = stablehlo.%s %s, %s : tensor<f32> %s" % (m, kind, a, b, loc))
        self.emit("  stablehlo.return %s : tensor<f32> %s" % (m, loc))
        self.emit("}) {dimensions = array<i64: %s>} : %s %s" % (dl, sig, loc))
        return r

    def gather_rows(self, table, indices):
        """table[V, D] gathered by indices[I...] -> [I..., D], as torch-mlir writes aten.embedding."""
        v, d = self.shape(table)
        ishape = self.shape(indices)
        r = self.value(list(ishape) + [d])
        k = len(ishape)
        self.emit('%s = "stablehlo.gather"(%s, %s) <{dimension_numbers = #stablehlo.gather<offset_dims = [%d], '
                  'collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = %d>, indices_are_sorted = '
                  'false, slice_sizes = array<i64: 1, %d>}> : (%s, %s) -> %s %s' %
                  (r, table, indices, k, k, d, self.ty(table), self.ty(indices), self.ty(r), self.loc()))
        return r

    def gather_points(self, table, indices):
        """table[N, V] at indices[N, 1, 2] (row, column pairs) -> [N, 1]: the target-logit pick that
        torch-mlir writes for every cross-entropy (aten.gather / nll_loss)."""
        n = self.shape(indices)[0]
        r = self.value([n, 1])
        self.emit('%s = "stablehlo.gather"(%s, %s) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = '
                  '[0, 1], start_index_map = [0, 1], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = '
                  'array<i64: 1, 1>}> : (%s, %s) -> %s %s' %
                  (r, table, indices, self.ty(table), self.ty(indices), self.ty(r), self.loc()))
        return r

    # ---- composite layers ---------------------------------------------------------------
    def bcast_to(self, x, like, dims):
        return self.broadcast(x, self.shape(like), dims)

    def causal_fill(self, scores, neg_inf, torch_like):
        """Scores [.., T, T] with key positions after the query's set to neg_inf (a scalar)."""
        shape = self.shape(scores)
        t = shape[-1]
        rank = len(shape)
        rows = self.iota([t, t], 0, "i64")
        cols = self.iota([t, t], 1, "i64")
        fill = self.bcast_to(neg_inf, scores, [])
        if self.style == "full" and torch_like:  # masked_fill(~tril(ones).bool(), -inf)
            keep = self.compare("LE", cols, rows, "SIGNED")
            masked = self.broadcast(self.unary("not", keep), shape, [rank - 2, rank - 1])
            return self.select(masked, fill, scores)
        if self.style == "full":  # jnp.where(row >= col, scores, -inf)
            keep = self.broadcast(self.compare("GE", rows, cols, "SIGNED"), shape, [rank - 2, rank - 1])
            return self.select(keep, scores, fill)
        masked = self.broadcast(self.compare("GT", cols, rows, "SIGNED"), shape, [rank - 2, rank - 1])
        return self.select(masked, fill, scores)

    def softmax_last(self, x, neg_inf, zero, forms):
        rank = len(self.shape(x))
        lead = list(range(rank - 1))
        m = self.reduce(x, neg_inf, "maximum", [rank - 1], forms[0])
        e = self.unary("exponential", self.sub(x, self.broadcast(m, self.shape(x), lead)))
        s = self.reduce(e, zero, "add", [rank - 1], forms[1])
        return self.div(e, self.broadcast(s, self.shape(x), lead))

    def mean_cross_entropy(self, logits2d, targets1d, zero, forms, one_hot_dtype):
        """Mean over rows of -log_softmax(logits)[row, target[row]]. targets1d: integer [N]."""
        n, v = self.shape(logits2d)
        m = self.reduce(logits2d, self.splat(float("-inf")), "maximum", [1], forms[0])
        shifted = self.sub(logits2d, self.broadcast(m, [n, v], [0]))
        s = self.reduce(self.unary("exponential", shifted), zero, "add", [1], forms[1])
        logp = self.sub(shifted, self.broadcast(self.unary("log", s), [n, v], [0]))
        if one_hot_dtype is None:  # torch-mlir: gather the (row, target) pairs; ignore_index -100
            pairs = self.concatenate([self.iota([n, 1, 1], 0, "i64"), self.reshape(targets1d, [n, 1, 1])], 2)
            nll = self.unary("negate", self.reshape(self.gather_points(logp, pairs), [n]))
            kept = self.compare("NE", targets1d, self.bcast_to(self.splat(-100, "i64"), targets1d, []), "SIGNED")
            nll = self.select(kept, nll, self.bcast_to(zero, nll, []))
            total = self.reduce(nll, zero, "add", [0], "applies")
            count = self.reduce(self.convert(kept, "f32"), zero, "add", [0], "applies")
            return self.div(total, count)
        classes = self.iota([n, v], 1, one_hot_dtype)
        hit = self.compare("EQ", classes, self.broadcast(targets1d, [n, v], [0]), "SIGNED")
        picked = self.select(hit, logp, self.bcast_to(zero, logp, []))  # JAX-like: a one-hot select
        total = self.reduce(picked, zero, "add", [0, 1], "applies")
        return self.div(self.unary("negate", total), self.scalar(float(n)))


# ---- the models -------------------------------------------------------------------------------

def nanogpt_params():
    c, names = N_EMBD, []
    names += [("transformer.wte.weight", [VOCAB, c]), ("transformer.wpe.weight", [BLOCK, c])]
    for i in range(N_LAYER):
        p = "transformer.h.%d." % i
        names += [(p + "ln_1.weight", [c]), (p + "ln_1.bias", [c]),
                  (p + "attn.c_attn.weight", [3 * c, c]), (p + "attn.c_attn.bias", [3 * c]),
                  (p + "attn.c_proj.weight", [c, c]), (p + "attn.c_proj.bias", [c]),
                  (p + "ln_2.weight", [c]), (p + "ln_2.bias", [c]),
                  (p + "mlp.c_fc.weight", [4 * c, c]), (p + "mlp.c_fc.bias", [4 * c]),
                  (p + "mlp.c_proj.weight", [c, 4 * c]), (p + "mlp.c_proj.bias", [c])]
    names += [("transformer.ln_f.weight", [c]), ("transformer.ln_f.bias", [c]),
              ("lm_head.weight", [VOCAB, c]), ("lm_head.bias", [VOCAB])]
    return names


def llama_params():
    c, h, names = N_EMBD, LLAMA_HIDDEN, []
    names.append(("tok_embeddings.weight", [VOCAB, c]))
    for i in range(N_LAYER):
        p = "layers.%d." % i
        names += [(p + "attention_norm.weight", [c]),
                  (p + "attention.wq.weight", [c, c]), (p + "attention.wk.weight", [c, c]),
                  (p + "attention.wv.weight", [c, c]), (p + "attention.wo.weight", [c, c]),
                  (p + "ffn_norm.weight", [c]),
                  (p + "feed_forward.w1.weight", [h, c]), (p + "feed_forward.w2.weight", [c, h]),
                  (p + "feed_forward.w3.weight", [h, c])]
    names += [("norm.weight", [c]), ("output.weight", [VOCAB, c])]
    half = N_EMBD // N_HEAD // 2
    names += [("rope.cos", [BLOCK, half]), ("rope.sin", [BLOCK, half])]
    return names


def signature(e, params, batch, jax, with_targets=True):
    args, decl = {}, []
    for i, (name, shape) in enumerate(params):
        args[name] = e.arg(i, shape)
        extra = ' {jax.arg_info = "%s", mhlo.sharding = "{replicated}"}' % name if jax else ""
        decl.append("%s: %s%s" % (args[name], tensor_type(shape), extra))
    tokens = e.arg(len(params), [batch, BLOCK], "i64")
    targets = e.arg(len(params) + 1, [batch, BLOCK], "i64") if with_targets else None
    for v in (tokens, targets) if with_targets else (tokens,):
        decl.append("%s: %s" % (v, e.ty(v)))
    return args, tokens, targets, ", ".join(decl)


def torch_linear(e, x, w, b=None, precision=False):
    """x[B, T, in] @ w[out, in]^T (+ b), as torch-mlir writes aten.linear: transpose, 2-D dot, reshape."""
    bsz, t, cin = e.shape(x)
    cout = e.shape(w)[0]
    wt = e.transpose(w, [1, 0])
    y = e.dot(e.reshape(x, [bsz * t, cin]), wt, contract=([1], [0]), precision=precision)
    y = e.reshape(y, [bsz, t, cout])
    return e.add(y, e.broadcast(b, [bsz, t, cout], [2])) if b is not None else y


def layer_norm(e, x, w, b, zero, eps):
    bsz, t, c = e.shape(x)
    inv_c = e.scalar(1.0 / c)
    mean = e.mul(e.reduce(x, zero, "add", [2]), e.broadcast(inv_c, [bsz, t], []))
    xc = e.sub(x, e.broadcast(mean, [bsz, t, c], [0, 1]))
    var = e.mul(e.reduce(e.mul(xc, xc), zero, "add", [2], "generic"), e.broadcast(inv_c, [bsz, t], []))
    rstd = e.unary("rsqrt", e.add(var, e.broadcast(eps, [bsz, t], [])))
    y = e.mul(xc, e.broadcast(rstd, [bsz, t, c], [0, 1]))
    return e.add(e.mul(y, e.broadcast(w, [bsz, t, c], [2])), e.broadcast(b, [bsz, t, c], [2]))


def nanogpt(style, batch):
    e = Emitter("nanogpt.py", style)
    params = nanogpt_params()
    a, tokens, targets, decl = signature(e, params, batch, jax=False)
    c, hd = N_EMBD, N_EMBD // N_HEAD
    e.scope = "embeddings"
    zero = e.splat(0.0)
    neg_inf = e.splat(float("-inf"))
    eps = e.scalar(1e-5)
    x = e.gather_rows(a["transformer.wte.weight"], tokens)
    pos = e.gather_rows(a["transformer.wpe.weight"], e.iota([BLOCK], 0, "i64"))
    x = e.add(x, e.broadcast(pos, [batch, BLOCK, c], [1, 2]))
    for i in range(N_LAYER):
        p = "transformer.h.%d." % i
        e.scope = p + "attn"
        h = layer_norm(e, x, a[p + "ln_1.weight"], a[p + "ln_1.bias"], zero, eps)
        qkv = torch_linear(e, h, a[p + "attn.c_attn.weight"], a[p + "attn.c_attn.bias"], precision=True)
        heads = []
        for j in range(3):
            part = e.slice(qkv, [(0, batch), (0, BLOCK), (j * c, (j + 1) * c)], with_stride=True)
            heads.append(e.transpose(e.reshape(part, [batch, BLOCK, N_HEAD, hd]), [0, 2, 1, 3]))
        q, k, v = heads
        kt = e.transpose(k, [0, 1, 3, 2])
        scores = e.dot(e.reshape(q, [batch * N_HEAD, BLOCK, hd]), e.reshape(kt, [batch * N_HEAD, hd, BLOCK]),
                       batch=([0], [0]), contract=([2], [1]))
        scores = e.reshape(scores, [batch, N_HEAD, BLOCK, BLOCK])
        scores = e.mul(scores, e.bcast_to(e.scalar(1.0 / math.sqrt(hd)), scores, []))
        att = e.softmax_last(e.causal_fill(scores, neg_inf, True), neg_inf, zero, ("generic", "applies"))
        y = e.dot(e.reshape(att, [batch * N_HEAD, BLOCK, BLOCK]), e.reshape(v, [batch * N_HEAD, BLOCK, hd]),
                  batch=([0], [0]), contract=([2], [1]))
        y = e.transpose(e.reshape(y, [batch, N_HEAD, BLOCK, hd]), [0, 2, 1, 3])
        y = torch_linear(e, e.reshape(y, [batch, BLOCK, c]), a[p + "attn.c_proj.weight"], a[p + "attn.c_proj.bias"])
        x = e.add(x, y)
        e.scope = p + "mlp"
        h = layer_norm(e, x, a[p + "ln_2.weight"], a[p + "ln_2.bias"], zero, eps)
        h = torch_linear(e, h, a[p + "mlp.c_fc.weight"], a[p + "mlp.c_fc.bias"])
        h = e.maximum(h, e.bcast_to(zero, h, []))
        x = e.add(x, torch_linear(e, h, a[p + "mlp.c_proj.weight"], a[p + "mlp.c_proj.bias"]))
    e.scope = "lm_head"
    x = layer_norm(e, x, a["transformer.ln_f.weight"], a["transformer.ln_f.bias"], zero, eps)
    logits = torch_linear(e, x, a["lm_head.weight"], a["lm_head.bias"], precision=True)
    e.scope = "cross_entropy"
    loss = e.mean_cross_entropy(e.reshape(logits, [batch * BLOCK, VOCAB]), e.reshape(targets, [batch * BLOCK]),
                                zero, ("generic", "applies"), None)
    header = 'module @nanogpt_2l attributes {torch.debug_module_name = "GPT"} {'
    func = "  func.func @main(%s) -> tensor<f32> {" % decl
    return finish(e, header, func, loss, "tensor<f32>"), [n for n, _ in params]


def rms_norm(e, x, w, zero, eps):
    bsz, t, c = e.shape(x)
    ms = e.div(e.reduce(e.mul(x, x), zero, "add", [2], "reducer"), e.broadcast(e.scalar(float(c)), [bsz, t], []))
    r = e.unary("rsqrt", e.add(ms, e.broadcast(eps, [bsz, t], [])))
    return e.mul(e.mul(x, e.broadcast(r, [bsz, t, c], [0, 1])), e.broadcast(w, [bsz, t, c], [2]))


def jax_linear(e, x, w):
    """x[B, T, in] . w[out, in] contracting `in`, as jnp.einsum('btc,oc->bto') exports."""
    return e.dot(x, w, contract=([2], [1]), precision=True)


def rope(e, x, cos, sin):
    """x[B, H, T, D]: rotates the pairs (x[..., i], x[..., i + D/2]) by the angle whose cos / sin
    are cos[t, i] / sin[t, i] (the halves convention)."""
    bsz, nh, t, d = e.shape(x)
    half = d // 2
    x1 = e.slice(x, [(0, bsz), (0, nh), (0, t), (0, half)])
    x2 = e.slice(x, [(0, bsz), (0, nh), (0, t), (half, d)])
    c = e.broadcast(cos, [bsz, nh, t, half], [2, 3])
    s = e.broadcast(sin, [bsz, nh, t, half], [2, 3])
    r1 = e.sub(e.mul(x1, c), e.mul(x2, s))
    r2 = e.add(e.mul(x2, c), e.mul(x1, s))
    return e.concatenate([r1, r2], 3)


def llama(style, batch, forward=False):
    """The loss, or with `forward` the logits [B, T, V] (no targets argument), as jax.export writes
    a forward-only model."""
    e = Emitter("llama.py", style)
    params = llama_params()
    a, tokens, targets, decl = signature(e, params, batch, jax=True, with_targets=not forward)
    c, hd = N_EMBD, N_EMBD // N_HEAD
    e.scope = "jit(loss)/tok_embeddings"
    zero = e.splat(0.0)
    neg_inf = e.splat(float("-inf"))
    eps = e.scalar(1e-5)
    x = e.gather_rows(a["tok_embeddings.weight"], e.convert(tokens, "i32"))
    for i in range(N_LAYER):
        p = "layers.%d." % i
        e.scope = "jit(loss)/" + p + "attention"
        h = rms_norm(e, x, a[p + "attention_norm.weight"], zero, eps)
        heads = {}
        for w in ("wq", "wk", "wv"):
            y = e.reshape(jax_linear(e, h, a[p + "attention." + w + ".weight"]), [batch, BLOCK, N_HEAD, hd])
            heads[w] = e.transpose(y, [0, 2, 1, 3])
        q = rope(e, heads["wq"], a["rope.cos"], a["rope.sin"])
        k = rope(e, heads["wk"], a["rope.cos"], a["rope.sin"])
        q = e.div(q, e.bcast_to(e.scalar(math.sqrt(hd)), q, []))
        scores = e.dot(q, k, batch=([0, 1], [0, 1]), contract=([3], [3]), precision=True)
        att = e.softmax_last(e.causal_fill(scores, neg_inf, False), neg_inf, zero, ("reducer", "reducer"))
        y = e.dot(att, heads["wv"], batch=([0, 1], [0, 1]), contract=([3], [2]), precision=True)
        y = e.reshape(e.transpose(y, [0, 2, 1, 3]), [batch, BLOCK, c])
        x = e.add(x, jax_linear(e, y, a[p + "attention.wo.weight"]))
        e.scope = "jit(loss)/" + p + "feed_forward"
        h = rms_norm(e, x, a[p + "ffn_norm.weight"], zero, eps)
        g = jax_linear(e, h, a[p + "feed_forward.w1.weight"])
        g = e.mul(g, e.unary("logistic", g))  # silu
        x = e.add(x, jax_linear(e, e.mul(g, jax_linear(e, h, a[p + "feed_forward.w3.weight"])),
                                a[p + "feed_forward.w2.weight"]))
    e.scope = "jit(loss)/output"
    logits = jax_linear(e, rms_norm(e, x, a["norm.weight"], zero, eps), a["output.weight"])
    header = ("module @jit_%s attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, "
              "mhlo.num_replicas = 1 : i32} {" % ("forward" if forward else "loss"))
    if forward:
        result_type = tensor_type([batch, BLOCK, VOCAB])
        func = '  func.func public @main(%s) -> (%s {jax.result_info = ""}) {' % (decl, result_type)
        return finish(e, header, func, logits, result_type), params
    e.scope = "jit(loss)/cross_entropy"
    loss = e.mean_cross_entropy(e.reshape(logits, [batch * BLOCK, VOCAB]),
                                e.convert(e.reshape(targets, [batch * BLOCK]), "i32"),
                                zero, ("reducer", "reducer"), "i32")
    func = ('  func.func public @main(%s) -> (tensor<f32> {jax.result_info = ""}) {' % decl)
    return finish(e, header, func, loss, "tensor<f32>"), params


def finish(e, header, func, result, result_type):
    out = ["#loc = loc(unknown)", '#loc1 = loc("%s":1:0)' % e.source_file, header, func]
    out += e.lines
    out.append("    return %s : %s loc(#loc)" % (result, result_type))
    out.append("  } loc(#loc1)")
    out.append("} loc(#loc)")
    out += ["#loc%d = %s" % (n, text) for n, text in e.locs]
    n_args = sum(1 for v in e.types if v.startswith("%arg"))
    text = "\n".join(out) + "\n"
    text = text.replace("@REGION_ARG0@", "%%arg%d" % n_args).replace("@REGION_ARG1@", "%%arg%d" % (n_args + 1))
    return text.replace("@REGION_VALUE@", "%%%d" % e.next_value)


# ---- initial values ---------------------------------------------------------------------------

def rope_tables(half, theta=10000.0):
    """cos / sin [BLOCK, half] of position t times frequency theta^(-i / half)."""
    freqs = theta ** (-np.arange(half, dtype=np.float64) / half)
    angles = np.outer(np.arange(BLOCK, dtype=np.float64), freqs)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def llama_initial(params, seed):
    rng = np.random.default_rng(seed)
    half = N_EMBD // N_HEAD // 2
    cos, sin = rope_tables(half)
    values = []
    for name, shape in params:
        if name == "rope.cos":
            values.append((name, cos))
        elif name == "rope.sin":
            values.append((name, sin))
        elif len(shape) == 1:  # RMSNorm gains
            values.append((name, np.ones(shape, np.float32)))
        else:
            std = 0.02 / math.sqrt(2 * N_LAYER) if name.endswith(("wo.weight", "w2.weight")) else 0.02
            values.append((name, (rng.standard_normal(shape) * std).astype(np.float32)))
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--style", choices=["full", "f64", "compat"], default="full")
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--seed", type=int, default=1337)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    text, names = nanogpt(args.style, args.batch)
    with open(os.path.join(args.out, "nanogpt_2l.mlir"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "nanogpt_2l.names.txt"), "w") as f:
        f.write("\n".join(names) + "\n")
    text, params = llama(args.style, args.batch)
    with open(os.path.join(args.out, "llama_2l.mlir"), "w") as f:
        f.write(text)
    safetensors_io.write_safetensors(os.path.join(args.out, "llama_2l.safetensors"), llama_initial(params, args.seed))
    text, _ = llama(args.style, args.batch, forward=True)
    with open(os.path.join(args.out, "llama_2l_forward.mlir"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
