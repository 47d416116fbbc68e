"""Edge shapes of the MoE library calls on the GPU: what breaks?"""
import torch, traceback
from argus.kernels import moe
torch.manual_seed(0)
dev = "cuda"
def ref_layer(x, router, w1, w2, k):
    x64 = x.double(); inter = w2.shape[1]
    probs = torch.softmax(x.float() @ router.float(), -1).double()
    wts, ch = probs.topk(k, -1); wts = wts / wts.sum(-1, keepdim=True)
    out = torch.zeros_like(x64)
    for t in range(x.shape[0]):
        for j in range(k):
            e = int(ch[t, j]); h = x64[t] @ w1[e].double()
            out[t] += wts[t, j] * ((torch.nn.functional.silu(h[:inter]) * h[inter:]) @ w2[e].double())
    return out
cases = [(1, 64, 64, 1, 1), (3, 264, 200, 3, 3), (5, 72, 8, 2, 2), (0, 128, 64, 4, 2), (300, 4104, 136, 16, 4), (7, 128, 64, 300, 8)]
for T, H, I, E, k in cases:
    for fused in (False, True):
        try:
            x = torch.randn(T, H, device=dev).to(torch.bfloat16)
            router = torch.randn(H, E, device=dev) * H**-0.5
            w1 = (torch.randn(E, H, 2 * I, device=dev) * H**-0.5).to(torch.bfloat16)
            w2 = (torch.randn(E, I, H, device=dev) * I**-0.5).to(torch.bfloat16)
            out = moe.moe_layer(x, router, w1, w2, k, fused_gather=fused)
            torch.cuda.synchronize()
            if T:
                want = ref_layer(x.cpu(), router.cpu(), w1.cpu(), w2.cpu(), k)
                err = float((out.cpu().double() - want).abs().max() / want.abs().max())
            else:
                err = 0.0
            print(T, H, I, E, k, fused, tuple(out.shape), f"err {err:.1e}", "OK" if err < 2e-2 else "WRONG")
        except Exception as e:
            print(T, H, I, E, k, fused, "RAISED", type(e).__name__, str(e)[:300])
# grouped_mm edge: empty offs total, E=1
for R, K, N, E in ((0, 64, 64, 2), (5, 8, 8, 1), (130, 24, 40, 3)):
    try:
        a = torch.randn(max(R, 1) if R else 0, K, device=dev).to(torch.bfloat16)
        b = torch.randn(E, K, N, device=dev).to(torch.bfloat16)
        offs = torch.linspace(0, R, E + 1, device=dev)[1:].round().to(torch.int32)
        c = moe.grouped_mm(a, b, offs)
        torch.cuda.synchronize()
        if R:
            want = torch._grouped_mm(a, b, offs=offs) if (R % 16 == 0) else None
        print("grouped_mm", R, K, N, E, tuple(c.shape), "ran")
    except Exception as e:
        print("grouped_mm", R, K, N, E, "RAISED", type(e).__name__, str(e)[:300])
