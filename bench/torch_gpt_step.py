#!/usr/bin/python3
"""PyTorch side of train_step_bench: times nanoGPT's training step on the same model.

One step = forward + backward + clip_grad_norm_ + torch.optim.AdamW (nanoGPT's param groups:
weight decay on >= 2-D parameters only), float32 on the CPU, with PyTorch's defaults.
The model is the PyTorch reference of the parity test (tests/libs/models/gpt_reference.py),
so both sides run the same architecture.

Usage: torch_gpt_step.py CONFIG_JSON
CONFIG_JSON: {vocab_size, block_size, n_layer, n_head, n_embd, bias, batch_size, threads,
              warmup, steps}
Prints one JSON line: {"ms_per_step", "peak_rss_kb", "threads", "torch"}.
"""
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "libs", "models"))
import torch  # noqa: E402
import gpt_reference  # noqa: E402


def main():
    c = json.loads(sys.argv[1])
    torch.set_num_threads(c["threads"])
    torch.manual_seed(1337)
    model = gpt_reference.Gpt(dict(c, dtype="float32")).float()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99))
    b, t, v = c["batch_size"], c["block_size"], c["vocab_size"]
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, v, (b, t), generator=g)
    y = torch.randint(0, v, (b, t), generator=g)

    def step():
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    for _ in range(c["warmup"]):
        step()
    start = time.perf_counter()
    for _ in range(c["steps"]):
        step()
    ms = (time.perf_counter() - start) * 1000 / c["steps"]
    print(json.dumps({"ms_per_step": ms, "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "threads": c["threads"], "torch": torch.__version__}))


if __name__ == "__main__":
    main()
