#!/usr/bin/python3
"""Oracle for GleasonK/stablehlo-exports exports/pt_bert.mlir (HuggingFace bert-base-uncased's
BertModel exported by torch_xla2 / jax.export, weights as arguments): BERT's forward written
here in PyTorch from the architecture (embeddings + LayerNorm, 12 post-norm encoder layers
with erf GELU, tanh pooler), on random weights, against PCP evaluating the export unmodified.

  bench/public_exports/pt_bert_oracle.py EXPORT.mlir [--tool=build/tools/pcp-stablehlo-run/pcp-stablehlo-run]
      [--backend=interpreter] [--work=/tmp/pt_bert]

Argument order (read from the export: which argument feeds which op): 0 word embeddings,
1 token-type embeddings, 2 position embeddings, 3-4 embedding LayerNorm, then per layer 16
(q, k, v, attention output: weight [out, in] and bias; LayerNorm; intermediate; output;
LayerNorm), 197-198 pooler, 199 the position_ids buffer [1, 512], 200 input_ids,
201 token_type_ids, 202 attention_mask.
Prints the largest difference of each result and exits 1 if any is above 1e-4 relative.
"""
import argparse
import math
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

H, LAYERS, HEADS, FF, VOCAB, POS, T = 768, 12, 12, 3072, 30522, 512, 7


def make_args(seed):
    g = torch.Generator().manual_seed(seed)

    def w(*shape):
        return torch.randn(*shape, generator=g) * 0.02

    def ln():
        return [1 + 0.1 * torch.randn(H, generator=g), 0.1 * torch.randn(H, generator=g)]

    args = [w(VOCAB, H), w(2, H), w(POS, H)] + ln()
    for _ in range(LAYERS):
        for _ in range(4):  # q, k, v, attention output
            args += [w(H, H), w(H)]
        args += ln()
        args += [w(FF, H), w(FF), w(H, FF), w(H)]
        args += ln()
    args += [w(H, H), w(H)]
    args.append(torch.arange(POS, dtype=torch.int32).reshape(1, POS))
    args.append(torch.tensor([[101, 7632, 1010, 2026, 2171, 2003, 102]], dtype=torch.int32))  # "Hi, my name is"
    args.append(torch.tensor([[0, 0, 0, 0, 1, 1, 1]], dtype=torch.int32))
    args.append(torch.tensor([[1, 1, 1, 1, 1, 1, 0]], dtype=torch.int32))  # last token masked out
    return args


def bert(args):
    a = [x.double() if x.is_floating_point() else x.long() for x in args]
    ids, types, mask, pos = a[200], a[201], a[202], a[199][:, :T]

    def layer_norm(x, g, b):
        return torch.nn.functional.layer_norm(x, (H,), g, b, eps=1e-12)

    def linear(x, wb):
        return x @ wb[0].t() + wb[1]

    x = layer_norm(a[0][ids] + a[1][types] + a[2][pos], a[3], a[4])
    bias = (1.0 - mask[:, None, None, :].double()) * torch.finfo(torch.float32).min
    k = 5
    for _ in range(LAYERS):
        p = a[k:k + 16]
        k += 16

        def heads(t):
            return t.reshape(1, T, HEADS, H // HEADS).transpose(1, 2)

        q, kk, v = heads(linear(x, p[0:2])), heads(linear(x, p[2:4])), heads(linear(x, p[4:6]))
        att = torch.softmax(q @ kk.transpose(-1, -2) / math.sqrt(H // HEADS) + bias, dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(1, T, H)
        x = layer_norm(linear(ctx, p[6:8]) + x, p[8], p[9])
        inter = torch.nn.functional.gelu(linear(x, p[10:12]))
        x = layer_norm(linear(inter, p[12:14]) + x, p[14], p[15])
    pooled = torch.tanh(linear(x[:, 0], a[197:199]))
    return [x.float(), pooled.float()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("export")
    parser.add_argument("--tool", default="build/tools/pcp-stablehlo-run/pcp-stablehlo-run")
    parser.add_argument("--backend", default="interpreter")
    parser.add_argument("--work", default="/tmp/pt_bert_oracle")
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    args = make_args(opts.seed)
    inputs, outputs = os.path.join(opts.work, "in.safetensors"), os.path.join(opts.work, "out.safetensors")
    safetensors_io.write(inputs, [(f"arg{i}", t) for i, t in enumerate(args)])
    subprocess.run([opts.tool, opts.export, f"--inputs={inputs}", f"--outputs={outputs}",
                    f"--backend={opts.backend}"], check=True)
    got = safetensors_io.read(outputs)
    want = bert(args)
    worst = 0.0
    for i, (name, w) in enumerate(zip(("last_hidden_state", "pooler_output"), want)):
        g = got[sorted(got)[i]] if f"result{i}" not in got else got[f"result{i}"]
        diff = (g.double() - w.double()).abs().max().item()
        rel = diff / max(w.abs().max().item(), 1e-30)
        worst = max(worst, rel)
        print(f"{name} {tuple(w.shape)}: max |PCP - PyTorch| = {diff:.3g} ({rel:.3g} of max |PyTorch|)")
    print("PASS" if worst <= 1e-4 else "FAIL", f"(worst {worst:.3g}, tolerance 1e-4 relative)")
    return 0 if worst <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
