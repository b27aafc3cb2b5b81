"""drvapi-probe subject: PyTorch init, a matmul, a convolution (cuDNN), and a
CUDA graph capture and replay, each checked. Exit 3 when torch is missing."""
import sys

try:
    import torch
except Exception as exc:  # noqa: BLE001
    print(f"SKIP torch: {exc}")
    sys.exit(3)

torch.cuda.init()
dev = torch.device("cuda")
torch.manual_seed(0)

a = torch.randn(256, 256, device=dev)
b = torch.randn(256, 256, device=dev)
c = a @ b
assert torch.allclose(c.cpu(), a.cpu() @ b.cpu(), atol=1e-2, rtol=1e-3), "matmul"

conv = torch.nn.Conv2d(3, 8, 3, padding=1).to(dev)
x = torch.randn(2, 3, 32, 32, device=dev)
y = conv(x)
y_ref = torch.nn.functional.conv2d(x.cpu(), conv.weight.cpu(), conv.bias.cpu(), padding=1)
assert torch.allclose(y.cpu(), y_ref, atol=1e-2, rtol=1e-2), "conv"

static_x = torch.zeros(4096, device=dev)
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(2):
        static_y = static_x * 2 + 1
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_y = static_x * 2 + 1
static_x.copy_(torch.arange(4096, device=dev, dtype=torch.float32))
g.replay()
torch.cuda.synchronize()
assert torch.equal(static_y.cpu(), torch.arange(4096, dtype=torch.float32) * 2 + 1), "graph"

print(
    f"PASS torch {torch.__version__} cuda {torch.version.cuda}"
    f" cudnn {torch.backends.cudnn.version()} {torch.cuda.get_device_name()}"
)
