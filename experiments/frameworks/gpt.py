#!/usr/bin/env python3
"""A GPT-style transformer trained (or run) on random tokens, for the framework
suite (suite.py): fixed seeds and PyTorch's deterministic settings, so two runs
of the same configuration on the same GPU end with the same loss, bit for bit.

Prints one JSON line last: the configuration, the per-step times (seconds, each
step ends with a device synchronize), their median, and the final loss (a JSON
float: Python's repr, exact). On an error it prints {"ok": false, "error": ...}
and exits 1.

  python3 gpt.py --shape small --precision bf16 --warmup 5 --steps 20
  python3 gpt.py --shape gpt2 --mode infer
  python3 gpt.py --cuda-graphs whole | callables     (training step captured)
  python3 gpt.py --compile                           (torch.compile, Inductor)
  python3 gpt.py --devices 2                         (the model split over cuda:0 and cuda:1)
  python3 gpt.py --expandable-segments               (PYTORCH_CUDA_ALLOC_CONF)

Nothing here knows about mearas: the suite runs this script natively and with
mearas's libcuda.so.1 first on the library path.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Shape:
    d_model: int
    layers: int
    heads: int
    context: int
    batch: int
    vocab: int


# small: ~7M parameters, launch-bound; gpt2: GPT-2-small's shape with an untied
# head (~163M parameters); tiny: for tests on a CPU
SHAPES: dict[str, Shape] = {
    "small": Shape(d_model=256, layers=4, heads=4, context=256, batch=8, vocab=8192),
    "gpt2": Shape(d_model=768, layers=12, heads=12, context=1024, batch=8, vocab=50257),
    "tiny": Shape(d_model=32, layers=2, heads=2, context=16, batch=2, vocab=64),
}


def param_count(s: Shape) -> int:
    """Parameters of the model below for shape s (weights and biases)."""
    d = s.d_model
    block = (2 * 2 * d) + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
    return s.vocab * d + s.context * d + s.layers * block + 2 * d + d * s.vocab


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="small")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="bf16",
                    help="fp32 (TF32 off) or bf16 autocast")
    ap.add_argument("--mode", choices=["train", "infer"], default="train")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--cuda-graphs", choices=["off", "whole", "callables"], default="off",
                    help="whole: the training step (forward, backward, optimizer) captured "
                         "with torch.cuda.graph; callables: torch.cuda.make_graphed_callables")
    ap.add_argument("--devices", type=int, choices=[1, 2], default=1,
                    help="2: first half of the blocks on cuda:0, the rest on cuda:1")
    ap.add_argument("--expandable-segments", action="store_true",
                    help="caching allocator with expandable_segments:True (VMM)")
    ap.add_argument("--async-allocator", action="store_true",
                    help="the cudaMallocAsync allocator backend (stream-ordered allocations; "
                         "with --cuda-graphs, captured into the graph as memory nodes)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                    help="cpu: for tests on a machine without a GPU")
    a = ap.parse_args(argv)
    if a.steps < 1 or a.warmup < 0:
        ap.error("--steps must be >= 1 and --warmup >= 0")
    if a.device == "cpu" and (a.compile or a.cuda_graphs != "off" or a.devices != 1 or a.expandable_segments
                              or a.async_allocator):
        ap.error("--device cpu runs the plain model only")
    if a.devices == 2 and (a.compile or a.cuda_graphs != "off"):
        ap.error("--devices 2 is not combined with --compile or --cuda-graphs")
    if a.compile and a.cuda_graphs != "off":
        ap.error("--compile and --cuda-graphs are separate configurations")
    if a.mode == "infer" and a.cuda_graphs == "callables":
        ap.error("--cuda-graphs callables graphs a training step; use whole for inference")
    return a


def setup_env(a: argparse.Namespace) -> None:
    """What must be in the environment before torch initializes CUDA."""
    # cuBLAS is deterministic only with a fixed workspace configuration
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if a.expandable_segments:
        conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = ",".join(x for x in (conf, "expandable_segments:True") if x)
    if a.async_allocator:
        conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = ",".join(x for x in (conf, "backend:cudaMallocAsync") if x)


def build(torch: Any, s: Shape, devices: list[Any]) -> Any:
    """The model: token and position embeddings, pre-norm blocks of causal
    self-attention (written out: no fused attention kernel, whose backward is
    not deterministic) and a GELU MLP, a final norm and an untied head."""
    nn = torch.nn
    F = torch.nn.functional

    class Attention(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(s.d_model, 3 * s.d_model)
            self.proj = nn.Linear(s.d_model, s.d_model)
            mask = torch.ones(s.context, s.context, dtype=torch.bool).tril()
            self.register_buffer("mask", mask, persistent=False)

        def forward(self, x: Any) -> Any:
            b, t, d = x.shape
            hd = d // s.heads
            q, k, v = self.qkv(x).split(d, dim=2)
            q, k, v = (z.view(b, t, s.heads, hd).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, d)
            return self.proj(y)

    class Block(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(s.d_model)
            self.attn = Attention()
            self.ln2 = nn.LayerNorm(s.d_model)
            self.fc = nn.Linear(s.d_model, 4 * s.d_model)
            self.out = nn.Linear(4 * s.d_model, s.d_model)

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln1(x))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(s.vocab, s.d_model)
            self.pos = nn.Embedding(s.context, s.d_model)
            self.blocks = nn.ModuleList(Block() for _ in range(s.layers))
            self.ln_f = nn.LayerNorm(s.d_model)
            self.head = nn.Linear(s.d_model, s.vocab, bias=False)
            self.split = s.layers // 2 if len(devices) == 2 else s.layers

        def place(self) -> None:
            last = devices[-1]
            self.tok.to(devices[0])
            self.pos.to(devices[0])
            for i, blk in enumerate(self.blocks):
                blk.to(devices[0] if i < self.split else last)
            self.ln_f.to(last)
            self.head.to(last)

        def forward(self, idx: Any, targets: Any) -> Any:
            t = idx.shape[1]
            pos = torch.arange(t, device=idx.device)
            x = self.tok(idx) + self.pos(pos)
            for i, blk in enumerate(self.blocks):
                if i == self.split:
                    x = x.to(devices[-1])  # the activations cross to the second device
                x = blk(x)
            logits = self.head(self.ln_f(x))
            return F.cross_entropy(logits.float().view(-1, s.vocab), targets.to(logits.device).reshape(-1))

    model = GPT()  # built on the CPU from the CPU generator: the same weights everywhere
    model.place()
    return model


def median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def run(a: argparse.Namespace) -> dict[str, Any]:
    setup_env(a)
    import torch

    torch.manual_seed(a.seed)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise RuntimeError("torch.cuda.is_available() is False")
    if cuda and torch.cuda.device_count() < a.devices:
        raise RuntimeError(f"{a.devices} devices wanted, torch.cuda.device_count() = {torch.cuda.device_count()}")
    devices = [torch.device(f"cuda:{i}") for i in range(a.devices)] if cuda else [torch.device("cpu")]
    s = SHAPES[a.shape]
    model = build(torch, s, devices)
    nparams = sum(p.numel() for p in model.parameters())
    gen = torch.Generator().manual_seed(a.seed + 1)
    nbatches = a.warmup + a.steps
    data = torch.randint(s.vocab, (nbatches, s.batch, s.context + 1), generator=gen).to(devices[0])
    inputs, targets = data[:, :, :-1].contiguous(), data[:, :, 1:].contiguous()
    dtype = torch.bfloat16 if a.precision == "bf16" else None
    train = a.mode == "train"
    if not train:
        model.eval()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1,
                            capturable=a.cuda_graphs == "whole") if train else None

    def autocast() -> Any:
        return torch.autocast(devices[0].type, dtype=torch.bfloat16, enabled=dtype is not None)

    fwd: Callable[[Any, Any], Any] = model
    if a.compile:
        fwd = torch.compile(model)

    def plain_step(i: int) -> Any:
        if not train:
            with torch.inference_mode(), autocast():
                return fwd(inputs[i], targets[i])
        assert opt is not None
        with autocast():
            loss = fwd(inputs[i], targets[i])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()

    step: Callable[[int], Any] = plain_step
    if a.cuda_graphs == "whole":
        step = graphed_whole(torch, a, model, opt, inputs, targets, autocast)
    elif a.cuda_graphs == "callables":
        step = graphed_callables(torch, model, opt, inputs, targets, dtype is not None)

    def sync() -> None:
        if cuda:
            for d in devices:
                torch.cuda.synchronize(d)

    times: list[float] = []
    loss = None
    for i in range(nbatches):
        sync()
        t0 = time.perf_counter()
        loss = step(i)
        sync()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    assert loss is not None
    final = float(loss.float().item())
    out: dict[str, Any] = {
        "ok": True, "script": "gpt", "pid": os.getpid(), "torch": str(torch.__version__),
        "device_name": torch.cuda.get_device_name(0) if cuda else "cpu",
        "shape": a.shape, "precision": a.precision, "mode": a.mode, "params": int(nparams),
        "warmup": a.warmup, "steps": a.steps, "compile": a.compile, "cuda_graphs": a.cuda_graphs,
        "devices": a.devices, "median_step_s": median(times), "step_times_s": times,
        "final_loss": final, "loss_finite": math.isfinite(final),
    }
    if a.devices == 2:
        out["moved_exact"] = moved_exact(torch, devices)
    if a.expandable_segments:
        out["expandable_segments"] = expandable_in_use(torch)
    if a.async_allocator:
        out["async_allocator"] = torch.cuda.memory.get_allocator_backend() == "cudaMallocAsync"
    if cuda:
        out["max_memory_allocated"] = int(torch.cuda.max_memory_allocated(devices[0]))
    return out


def graphed_whole(torch: Any, a: argparse.Namespace, model: Any, opt: Any, inputs: Any, targets: Any,
                  autocast: Callable[[], Any]) -> Callable[[int], Any]:
    """The whole step captured once into a CUDA graph and replayed: each step
    copies its batch into the static input and replays."""
    x = inputs[0].clone()
    y = targets[0].clone()
    train = a.mode == "train"

    def body() -> Any:
        if not train:
            with torch.no_grad(), autocast():
                return model(x, y)
        with autocast():
            loss = model(x, y)
        loss.backward()
        opt.step()
        return loss.detach()

    # warm up on a side stream (allocations and lazy initialization happen
    # outside the capture); these steps train the model too, so a replayed
    # step i is step i + 3 of an eager run, the same for native and mearas
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            if train:
                opt.zero_grad(set_to_none=True)
            body()
    torch.cuda.current_stream().wait_stream(side)
    if train:
        opt.zero_grad(set_to_none=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = body()

    def step(i: int) -> Any:
        x.copy_(inputs[i])
        y.copy_(targets[i])
        graph.replay()
        return static_loss

    return step


def graphed_callables(torch: Any, model: Any, opt: Any, inputs: Any, targets: Any,
                      bf16: bool) -> Callable[[int], Any]:
    """Forward and backward as graphed callables; the optimizer runs eagerly.
    Autocast's cache is off inside, as make_graphed_callables requires."""

    class Wrapped(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, x: Any, y: Any) -> Any:
            with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=bf16, cache_enabled=False):
                return self.m(x, y)

    graphed = torch.cuda.make_graphed_callables(Wrapped(), (inputs[0].clone(), targets[0].clone()))

    def step(i: int) -> Any:
        loss = graphed(inputs[i], targets[i])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def moved_exact(torch: Any, devices: list[Any]) -> bool:
    """A tensor moved cuda:0 -> cuda:1 -> cuda:0 comes back bit for bit."""
    g = torch.Generator().manual_seed(7)
    a = torch.randn(1 << 20, generator=g).to(devices[0])
    b = a.to(devices[1]).mul(2).to(devices[0])
    return bool(torch.equal(b, a * 2))


def expandable_in_use(torch: Any) -> bool:
    """Whether the caching allocator made expandable segments (VMM): its
    snapshot says so per segment; none, or no such field: False."""
    return any(bool(x.get("is_expandable", False)) for x in torch.cuda.memory_snapshot())


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    try:
        out = run(a)
    except Exception as e:  # reported as a verdict; the traceback goes to stderr
        import traceback

        traceback.print_exc()
        msg = str(e).strip().splitlines()
        print(json.dumps({"ok": False, "script": "gpt", "pid": os.getpid(),
                          "error": f"{type(e).__name__}: {msg[0] if msg else ''}"}), flush=True)
        return 1
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
