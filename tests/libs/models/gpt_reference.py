#!/usr/bin/python3
"""PyTorch reference for the GPT parity test (gpt_torch_parity_test.cc).

A self-contained model of the nanoGPT architecture, written from its description (token and
position embeddings, pre-LayerNorm blocks with causal multi-head self-attention and a 4x
exact-GELU MLP, final LayerNorm, lm_head tied to wte, mean cross-entropy), with nanoGPT's
state_dict names, so that load_state_dict(strict=True) checks PCP's names and layouts.

Usage:
  gpt_reference.py grad  IN.safetensors OUT.safetensors CONFIG_JSON
  gpt_reference.py train IN.safetensors OUT.safetensors CONFIG_JSON

CONFIG_JSON: {"vocab_size", "block_size", "n_layer", "n_head", "n_embd", "bias",
              "dtype": "float64"|"float32", and for train: "steps", "lrs": [...],
              "beta1", "beta2", "eps", "weight_decay", "grad_clip"}.
IN holds the parameters (nanoGPT names, F32) and I32 "tokens"/"targets" ("tokens.<k>" and
"targets.<k>" per step for train). OUT (all F32) holds:
  grad:  "loss", "grad.<name>" for every parameter
  train: "<name>" (parameters after all steps), "loss.<k>", "grad_norm.<k>" (pre-clip norm)
Computation runs in CONFIG_JSON's dtype (float64 gives a tight oracle) on one CPU thread.
"""
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../examples/stablehlo"))
import safetensors_io  # noqa: E402


def read_safetensors(path):
    """{name: torch tensor} of a safetensors file (e.g. a PCP checkpoint, for load_state_dict)."""
    return safetensors_io.read_safetensors(path, torch.from_numpy)


class SelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head = c["n_head"]
        self.c_attn = nn.Linear(c["n_embd"], 3 * c["n_embd"], bias=c["bias"])
        self.c_proj = nn.Linear(c["n_embd"], c["n_embd"], bias=c["bias"])
        n = c["block_size"]
        # Not persistent: it is not a parameter and must not appear in the state_dict.
        self.register_buffer("causal", torch.ones(n, n, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        heads = lambda z: z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        scores = scores.masked_fill(~self.causal[:t, :t], float("-inf"))
        y = F.softmax(scores, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Mlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c["n_embd"], 4 * c["n_embd"], bias=c["bias"])
        self.gelu = nn.GELU()  # exact erf form
        self.c_proj = nn.Linear(4 * c["n_embd"], c["n_embd"], bias=c["bias"])

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


def layer_norm(c):
    ln = nn.LayerNorm(c["n_embd"], eps=1e-5, elementwise_affine=True)
    if not c["bias"]:
        ln.bias = None  # weight only, as nanoGPT's bias=False LayerNorm
    return ln


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = layer_norm(c)
        self.attn = SelfAttention(c)
        self.ln_2 = layer_norm(c)
        self.mlp = Mlp(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c["vocab_size"], c["n_embd"]),
            wpe=nn.Embedding(c["block_size"], c["n_embd"]),
            h=nn.ModuleList([Block(c) for _ in range(c["n_layer"])]),
            ln_f=layer_norm(c)))
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied

    def forward(self, tokens, targets):
        t = tokens.size(1)
        pos = torch.arange(t, dtype=torch.long, device=tokens.device)
        x = self.transformer.wte(tokens) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def load_model(c, inputs):
    model = Gpt(c).to(getattr(torch, c["dtype"]))
    state = {k: v for k, v in inputs.items() if k.startswith("transformer.")}
    state["lm_head.weight"] = state["transformer.wte.weight"]
    model.load_state_dict(state, strict=True)  # names and shapes must match exactly
    return model


def main():
    mode, in_path, out_path, config = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    torch.set_num_threads(1)
    inputs = safetensors_io.read_safetensors(in_path, torch.from_numpy)
    model = load_model(config, inputs)
    out = {}
    if mode == "grad":
        loss = model(inputs["tokens"].long(), inputs["targets"].long())
        loss.backward()
        out["loss"] = loss
        for name, p in model.named_parameters():  # lm_head.weight is wte: listed once
            out["grad." + name] = p.grad
    elif mode == "train":
        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": config["weight_decay"]},
             {"params": no_decay, "weight_decay": 0.0}],
            lr=config["lrs"][0], betas=(config["beta1"], config["beta2"]), eps=config["eps"],
            foreach=False)
        for k in range(config["steps"]):
            for group in opt.param_groups:
                group["lr"] = config["lrs"][k]
            opt.zero_grad(set_to_none=True)
            loss = model(inputs["tokens.%d" % k].long(), inputs["targets.%d" % k].long())
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config["grad_clip"])
            opt.step()
            out["loss.%d" % k] = loss
            out["grad_norm.%d" % k] = norm
        for name, p in model.named_parameters():
            out[name] = p
    else:
        raise SystemExit("unknown mode " + mode)
    safetensors_io.write_safetensors(out_path, out)


if __name__ == "__main__":
    main()
