"""TMA im2col loads on the hardware against argus's model of them (`argus.atoms.tma.im2col_rows`): a probe kernel
(the prelude's `tma_load_im2col_4d`, one load into shared memory, copied out) compiled for sm_90a on any machine
(its SASS issues ``UTMALDG.4D.IM2COL``), and on a Hopper GPU run over convolution geometries (stride 1 and 2,
padding, dilation, tiles crossing rows and images, the last image's end, the 128-byte swizzle) whose every row must
be the model's pixel, or zeros where the model says the pixel is outside the tensor."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from argus.atoms.swizzle import hopper_swizzle
from argus.atoms.tma import Im2colBox, conv_im2col_box, im2col_rows
from argus.backend.cuda.codegen.prelude import render
from argus.backend.cuda.toolchain import compile_cuda
from argus.ir.types import f32

CHANNELS = 32  # f32: 128 bytes of channels, one swizzle row; values are exact integers (unique ids)


def probe_source(pixels: int) -> str:
    return (
        render({"tma_im2col", "mbarrier"})
        + f"""
extern "C" __global__ void im2col_probe(float* out, int c, int w, int h, int n, int off_w, int off_h,
                                        const __grid_constant__ argus::TensorMap tmap) {{
  __shared__ __align__(1024) float box[{pixels * CHANNELS}];
  __shared__ __align__(8) unsigned long long bar;
  if (threadIdx.x == 0) {{
    argus::mbarrier_init(argus::smem_u32(&bar), 1);
    argus::mbarrier_init_fence();
  }}
  __syncthreads();
  if (threadIdx.x == 0) {{
    argus::mbarrier_arrive_expect_tx(argus::smem_u32(&bar), {pixels * CHANNELS * 4});
    argus::tma_load_im2col_4d(argus::smem_u32(box), &tmap, c, w, h, n, static_cast<unsigned short>(off_w),
                              static_cast<unsigned short>(off_h), argus::smem_u32(&bar));
  }}
  argus::mbarrier_wait(argus::smem_u32(&bar), 0);
  for (int i = threadIdx.x; i < {pixels * CHANNELS}; i += blockDim.x) out[i] = box[i];
}}
"""
    )


def test_the_probe_compiles_to_an_im2col_tma_load() -> None:
    from argus.backend.cuda.inspection import sass

    compiled = compile_cuda(probe_source(64), "im2col_probe", arch="sm_90a", cache=False)
    text = sass(compiled.cubin)
    assert "UTMALDG.4D.IM2COL" in text, [line for line in text.splitlines() if "UTMALDG" in line]


def _expected(x: np.ndarray, box: Im2colBox, start: tuple, offsets: tuple) -> np.ndarray:
    rows, inside = im2col_rows(x.shape, box, start, offsets)
    want = np.zeros((box.pixels, CHANNELS), dtype=np.float32)
    for r, (pixel, ok) in enumerate(zip(rows, inside, strict=True)):
        if ok:
            want[r] = x[pixel]
    return want


def _unswizzle(raw: np.ndarray, pixels: int, swizzle: int) -> np.ndarray:
    """The (pixels, CHANNELS) box from shared memory's words, laid out as TMA writes a tiled box of that shape."""
    if not swizzle:
        return raw.reshape(pixels, CHANNELS)
    pattern = hopper_swizzle(swizzle, 32)
    return np.array([[raw[pattern(r * CHANNELS + c)] for c in range(CHANNELS)] for r in range(pixels)])


GEOMETRIES = [  # (N, H, W, kernel, stride, padding, dilation, pixels)
    (2, 3, 3, 3, 1, 1, 1, 16),
    (3, 7, 7, 3, 1, 1, 1, 64),
    (2, 14, 14, 3, 2, 1, 1, 64),
    (2, 9, 11, 3, 1, 2, 2, 32),
    (2, 10, 13, 5, 3, 2, 1, 32),
    (1, 6, 6, 1, 2, 0, 1, 16),
]


@pytest.mark.gpu
def test_hardware_im2col_loads_match_the_model() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    from argus.runtime import driver as drv
    from argus.runtime.tensor_maps import encode_im2col, plan_im2col

    checked = 0
    for (n, h, w, k, s, p, d, pixels), swizzle in itertools.product(GEOMETRIES, (0, 128)):
        x = np.arange(n * h * w * CHANNELS, dtype=np.float32).reshape(n, h, w, CHANNELS) + 1
        xt = torch.from_numpy(x).cuda()
        out = torch.zeros(pixels * CHANNELS, dtype=torch.float32, device="cuda")
        box = conv_im2col_box((p, p), ((k - 1) * d + 1,) * 2, (s, s), pixels, CHANNELS)
        spec = plan_im2col(f32, xt.data_ptr(), tuple(x.shape), tuple(xt.stride()), box, swizzle, "x")
        compiled = compile_cuda(probe_source(pixels), "im2col_probe", arch="sm_90a")
        oh, ow = ((e + 2 * p - d * (k - 1) - 1) // s + 1 for e in (h, w))
        positions = [(b, i, j) for b in range(n) for i in range(oh) for j in range(ow)]
        with drv.ContextScope(0, "im2col_probe"):
            module = drv.call("im2col_probe", "cuModuleLoadData", compiled.cubin)
            function = drv.call("im2col_probe", "cuModuleGetFunction", module, b"im2col_probe")
            tmap = encode_im2col(spec, "im2col_probe")
            for first in range(0, len(positions), max(1, len(positions) // 5)):
                b, i, j = positions[first]
                start = (b, i * s - p, j * s - p)
                for taps in ((0, 0), (k - 1, k - 1), (k // 2, 0)):
                    offsets = (taps[0] * d, taps[1] * d)
                    params = drv.kernel_arguments(
                        (out.data_ptr(),), (0, start[2], start[1], start[0], offsets[1], offsets[0]), (tmap,)
                    )
                    out.zero_()
                    torch.cuda.synchronize()
                    drv.call("im2col_probe", "cuLaunchKernel", function, 1, 1, 1, 128, 1, 1, 0, 0, int(params), 0)
                    torch.cuda.synchronize()
                    got = _unswizzle(out.cpu().numpy(), pixels, swizzle)
                    want = _expected(x, box, start, offsets)
                    bad = np.nonzero(~np.all(got == want, axis=1))[0]
                    assert not len(bad), (
                        f"N={n} {h}x{w} k{k} s{s} p{p} d{d} swizzle {swizzle} start {start} offsets {offsets}: "
                        f"rows {bad[:8].tolist()} differ: got {got[bad[0], :2]}, model {want[bad[0], :2]}"
                    )
                    checked += 1
    assert checked > 50
