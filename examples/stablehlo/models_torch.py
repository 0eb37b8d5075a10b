#!/usr/bin/python3
"""PyTorch models of the two example StableHLO modules (gen_models.py), the parity oracle.

Written from the architectures, not from the .mlir text:
  nanogpt: token + position embeddings; pre-LayerNorm blocks (weight and bias, eps 1e-5) with
           causal multi-head attention (one fused qkv Linear with bias, scale 1/sqrt(head_dim))
           and a ReLU 4x MLP; final LayerNorm; untied lm_head with bias; mean cross-entropy.
  llama:   token embedding; RMSNorm (weight only, eps 1e-5) before attention and MLP; RoPE on
           q and k (halves convention: x[..., :D/2] and x[..., D/2:] rotated by cos/sin tables
           rope.cos / rope.sin [T, D/2], inputs, not parameters); causal attention without
           biases; SwiGLU MLP w2(silu(w1 x) * w3 x); final RMSNorm; untied output; mean
           cross-entropy.
Parameters are loaded by name with load_state_dict(strict=True), so the names and shapes of a
safetensors file are checked, not only its values. Sizes come from the tensors' shapes.

Usage:
  models_torch.py grad  nanogpt|llama IN.safetensors OUT.safetensors [N_HEAD]
      IN: every parameter by name (plus rope.cos / rope.sin for llama) and integer
      "tokens" / "targets" [B, T]. OUT (F32): "loss" and "grad.<name>" for every trainable
      parameter. Computes in float64 on one thread.
  models_torch.py train nanogpt|llama TEXT [STEPS]
      Trains from the example jobs' initial values on a character-level text (first 90% train,
      last 10% val) with AdamW (lr 1e-3, warmup 100, cosine to 1e-4, betas 0.9/0.99, weight
      decay 0.1, clip 1.0), B = 12, T = 64, float32, and prints the val loss every 250 steps:
      a check that the example sizes learn tiny-shakespeare.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import safetensors_io


def causal_attention(q, k, v):
    """q, k, v: [B, H, T, D]. Softmax over keys at or before each query's position."""
    t = q.size(2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    future = torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)
    return F.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v


# ---- nanoGPT ----------------------------------------------------------------------------------

class GptAttention(nn.Module):
    def __init__(self, c, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(c, 3 * c)
        self.c_proj = nn.Linear(c, c)

    def forward(self, x):
        b, t, c = x.shape
        split = lambda z: z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        q, k, v = (split(z) for z in self.c_attn(x).split(c, dim=2))
        return self.c_proj(causal_attention(q, k, v).transpose(1, 2).reshape(b, t, c))


class GptMlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c, 4 * c)
        self.c_proj = nn.Linear(4 * c, c)

    def forward(self, x):
        return self.c_proj(F.relu(self.c_fc(x)))


class GptBlock(nn.Module):
    def __init__(self, c, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c, eps=1e-5)
        self.attn = GptAttention(c, n_head)
        self.ln_2 = nn.LayerNorm(c, eps=1e-5)
        self.mlp = GptMlp(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGpt(nn.Module):
    def __init__(self, vocab, block, c, n_layer, n_head):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, c), wpe=nn.Embedding(block, c),
            h=nn.ModuleList([GptBlock(c, n_head) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(c, eps=1e-5)))
        self.lm_head = nn.Linear(c, vocab)  # untied, with bias

    def forward(self, tokens, targets):
        tr = self.transformer
        x = tr.wte(tokens) + tr.wpe(torch.arange(tokens.size(1)))
        for block in tr.h:
            x = block(x)
        logits = self.lm_head(tr.ln_f(x))
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def nanogpt_from(state, n_head):
    vocab, c = state["transformer.wte.weight"].shape
    block = state["transformer.wpe.weight"].shape[0]
    n_layer = len({k.split(".")[2] for k in state if k.startswith("transformer.h.")})
    return NanoGpt(vocab, block, c, n_layer, n_head)


# ---- Llama ------------------------------------------------------------------------------------

class RmsNorm(nn.Module):
    def __init__(self, c, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(c))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def apply_rope(x, cos, sin):
    """x: [B, H, T, D]; cos, sin: [T, D/2]."""
    half = x.size(-1) // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, c, n_head):
        super().__init__()
        self.n_head = n_head
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(c, c, bias=False) for _ in range(4))

    def forward(self, x, cos, sin):
        b, t, c = x.shape
        split = lambda z: z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        q = apply_rope(split(self.wq(x)), cos, sin)
        k = apply_rope(split(self.wk(x)), cos, sin)
        return self.wo(causal_attention(q, k, split(self.wv(x))).transpose(1, 2).reshape(b, t, c))


class SwiGlu(nn.Module):
    def __init__(self, c, hidden):
        super().__init__()
        self.w1 = nn.Linear(c, hidden, bias=False)
        self.w2 = nn.Linear(hidden, c, bias=False)
        self.w3 = nn.Linear(c, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, c, n_head, hidden):
        super().__init__()
        self.attention_norm = RmsNorm(c)
        self.attention = LlamaAttention(c, n_head)
        self.ffn_norm = RmsNorm(c)
        self.feed_forward = SwiGlu(c, hidden)

    def forward(self, x, cos, sin):
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.feed_forward(self.ffn_norm(x))


class Rope(nn.Module):
    """The cos / sin tables as buffers: loaded by name, never trained."""

    def __init__(self, block, half):
        super().__init__()
        self.register_buffer("cos", torch.zeros(block, half))
        self.register_buffer("sin", torch.zeros(block, half))


class Llama(nn.Module):
    def __init__(self, vocab, block, c, n_layer, n_head, hidden):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, c)
        self.layers = nn.ModuleList([LlamaBlock(c, n_head, hidden) for _ in range(n_layer)])
        self.norm = RmsNorm(c)
        self.output = nn.Linear(c, vocab, bias=False)
        self.rope = Rope(block, c // n_head // 2)

    def forward(self, tokens, targets):
        t = tokens.size(1)
        cos, sin = self.rope.cos[:t], self.rope.sin[:t]
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x, cos, sin)
        logits = self.output(self.norm(x))
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def llama_from(state, n_head):
    vocab, c = state["tok_embeddings.weight"].shape
    block = state["rope.cos"].shape[0]
    hidden = state["layers.0.feed_forward.w1.weight"].shape[0]
    n_layer = len({k.split(".")[1] for k in state if k.startswith("layers.")})
    return Llama(vocab, block, c, n_layer, n_head, hidden)


BUILDERS = {"nanogpt": nanogpt_from, "llama": llama_from}


def load(kind, inputs, n_head, dtype):
    state = {k: v for k, v in inputs.items() if k not in ("tokens", "targets")}
    model = BUILDERS[kind](state, n_head).to(dtype)
    model.load_state_dict({k: v.to(dtype) for k, v in state.items()}, strict=True)
    return model


# ---- modes ------------------------------------------------------------------------------------

def grad(kind, in_path, out_path, n_head):
    torch.set_num_threads(1)
    inputs = safetensors_io.read_safetensors(in_path, torch.from_numpy)
    model = load(kind, inputs, n_head, torch.float64)
    loss = model(inputs["tokens"].long(), inputs["targets"].long())
    loss.backward()
    out = {"loss": loss}
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad
    safetensors_io.write_safetensors(out_path, out)


def initial_state(kind, n_head, seed=1337):
    """The example jobs' initial values: for nanogpt what config/jobs/nanogpt_stablehlo.yaml's
    `init` asks for (matrices N(0, 0.02), LayerNorm gains 1, biases 0); for llama the values in
    llama_2l.safetensors (the job's `params`)."""
    if kind == "llama":
        state = safetensors_io.read_safetensors(
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama_2l.safetensors"), torch.from_numpy)
        return load(kind, state, n_head, torch.float32)
    torch.manual_seed(seed)
    model = NanoGpt(65, 64, 64, 2, n_head)
    for name, p in model.named_parameters():
        if p.dim() >= 2:
            nn.init.normal_(p, 0.0, 0.02)
        elif name.endswith(".bias"):
            nn.init.zeros_(p)
        else:
            nn.init.ones_(p)
    return model


def train(kind, text_path, steps, n_head=4, batch=12, block=64):
    torch.manual_seed(1337)
    with open(text_path) as f:
        text = f.read()
    stoi = {ch: i for i, ch in enumerate(sorted(set(text)))}
    data = torch.tensor([stoi[ch] for ch in text], dtype=torch.long)
    n = int(0.9 * len(data))
    splits = {"train": data[:n], "val": data[n:]}
    model = initial_state(kind, n_head)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99))

    def get_batch(split):
        d = splits[split]
        ix = torch.randint(len(d) - block - 1, (batch,))
        return torch.stack([d[i:i + block] for i in ix]), torch.stack([d[i + 1:i + 1 + block] for i in ix])

    def lr_at(it):
        if it < 100:
            return 1e-3 * (it + 1) / 101
        ratio = min(1.0, (it - 100) / (steps - 100))
        return 1e-4 + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (1e-3 - 1e-4)

    for it in range(steps + 1):
        if it % 250 == 0 or it == steps:
            model.eval()
            with torch.no_grad():
                val = sum(model(*get_batch("val")).item() for _ in range(50)) / 50
            print("step %d: val loss %.4f" % (it, val), flush=True)
            model.train()
        if it == steps:
            break
        for group in opt.param_groups:
            group["lr"] = lr_at(it)
        loss = model(*get_batch("train"))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("grad", "train") or sys.argv[2] not in BUILDERS:
        raise SystemExit(__doc__)
    if sys.argv[1] == "grad":
        grad(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]) if len(sys.argv) > 5 else 4)
    else:
        train(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 2000)


if __name__ == "__main__":
    main()
