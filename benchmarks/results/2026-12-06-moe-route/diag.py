"""Which field of the routing differs with the kernels at Qwen3-30B-A3B, 256 tokens (call 1's one "NO")."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import torch  # noqa: E402
from moe_layer_bench import layer_weights  # noqa: E402

from argus.kernels import moe  # noqa: E402

dev = torch.device("cuda")
for tokens, hidden, experts, k in [(256, 2048, 128, 8), (128, 2048, 128, 8), (300, 2048, 128, 8)]:
    torch.manual_seed(0)
    w1, w2, router = layer_weights(torch, hidden, 768, experts, dev)
    x = torch.randn(tokens, hidden, device=dev).to(torch.bfloat16)
    moe.ROUTE_KERNEL = False
    a = moe.route(x, router, k)
    moe.ROUTE_KERNEL = True
    b = moe.route(x, router, k)
    logits = x.float() @ router.float()
    top, idx = logits.topk(k, dim=-1)
    ch, w = moe.top_k_softmax(logits, k)
    print(tokens, "R", tokens * k, "pos", b.pos is not None)
    for f in ("token", "order", "offs", "counts"):
        print(" ", f, torch.equal(getattr(a, f).long(), getattr(b, f).long()))
    print("  weight maxrel", ((a.weight - b.weight).abs() / a.weight.abs()).max().item())
    print("  positions", torch.equal(a.positions(), b.positions()))
    print("  topk choices equal", torch.equal(ch.long(), idx), "ties", int((top[:, :-1] == top[:, 1:]).sum()))
    bad = (ch.long() != idx).any(dim=1).nonzero().flatten()[:3].tolist()
    for t in bad:
        print("   token", t, ch[t].tolist(), idx[t].tolist(), top[t].tolist())
