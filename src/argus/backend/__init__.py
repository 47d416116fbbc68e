"""argus backends: from argus IR to code a GPU runs.

Owns nothing itself; each target lives in a subpackage. Today: `argus.backend.cuda` (NVIDIA Hopper,
``sm_90a``): the NVRTC compile toolchain, the on-disk cubin cache and SASS/resource inspection, all
usable without a GPU. The IR stays architecture-neutral so that other backends can be added beside it.
"""
