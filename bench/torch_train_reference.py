#!/usr/bin/python3
"""Quality oracle: trains the PyTorch reference GPT (tests/libs/models/gpt_reference.py) with
nanoGPT's training loop on a character-level corpus and prints its loss estimates, so PCP's
`pcp-local train` result can be compared with PyTorch on the same machine and configuration.

Usage: torch_train_reference.py DATA.txt [--seed S] [--max_iters N] [--eval_iters N]
       [--threads N]   (model/optimizer: nanoGPT's CPU shakespeare_char configuration)
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "libs", "models"))
import torch  # noqa: E402
import gpt_reference  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--max_iters", type=int, default=2000)
    ap.add_argument("--eval_iters", type=int, default=200)
    ap.add_argument("--eval_interval", type=int, default=250)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    text = open(a.data, encoding="utf-8").read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    n = int(0.9 * len(data))
    train, val = data[:n], data[n:]
    c = dict(vocab_size=len(chars), block_size=64, n_layer=4, n_head=4, n_embd=128, bias=False, dtype="float32")
    b, t = 12, 64
    model = gpt_reference.Gpt(c).float()
    # nanoGPT's init (normal 0.02; c_proj scaled), which the reference module may not apply itself.
    for name, p in model.named_parameters():
        if name.endswith("c_proj.weight"):
            torch.nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * c["n_layer"]))
        elif p.dim() >= 2:
            torch.nn.init.normal_(p, 0.0, 0.02)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99))

    def batch(split):
        d = train if split == "train" else val
        ix = torch.randint(len(d) - t, (b,))
        return torch.stack([d[i:i + t] for i in ix]), torch.stack([d[i + 1:i + 1 + t] for i in ix])

    def lr_at(it):
        if it < 100:
            return 1e-3 * (it + 1) / 101
        if it > 2000:
            return 1e-4
        ratio = (it - 100) / (2000 - 100)
        return 1e-4 + 0.5 * (1 + math.cos(math.pi * ratio)) * (1e-3 - 1e-4)

    @torch.no_grad()
    def estimate():
        out = {}
        for split in ("train", "val"):
            out[split] = sum(model(*batch(split)).item() for _ in range(a.eval_iters)) / a.eval_iters
        return out

    start = time.time()
    for it in range(a.max_iters + 1):
        if it % a.eval_interval == 0 or it == a.max_iters:
            e = estimate()
            print(f"step {it}: train loss {e['train']:.4f}, val loss {e['val']:.4f} ({time.time() - start:.0f} s)", flush=True)
        if it == a.max_iters:
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(it)
        loss = model(*batch("train"))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()


if __name__ == "__main__":
    main()
