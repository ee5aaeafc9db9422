"""The kernels compile for a real GPU (sm_90, Hopper) even on a machine without one.

The interpreter accepts things a GPU compiler rejects (``tl.dot`` with a dim < 16, bf16 dots
that the interpreter cannot run at all). Triton can compile ahead of time for a named target
without a driver, so this test lowers every kernel, in its GPU configurations, all the way to a
cubin. It runs in a subprocess with ``TRITON_INTERPRET=0``, since kernels defined in this (interpreted)
test process cannot be compiled. Skipped where Triton is missing or cannot target CUDA.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (label, kernel, dtype, constexprs): the configurations the launchers pick on a GPU, plus edge cases.
TF = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def _configs():
    from pykv_kernels.paged_decode import paged_decode_kernel, paged_decode_reduce_kernel
    from pykv_kernels.paged_prefill import paged_prefill_kernel
    from pykv_kernels.store_kv import store_kv_kernel

    dec = dict(GROUP=4, HEAD_DIM=128, BLOCK_SIZE=16, BLOCK_G=16, BLOCK_N=64, BLOCK_D=128, NUM_SPLITS=1, NATIVE_DOT=True)
    pre = dict(GROUP=4, HEAD_DIM=128, BLOCK_SIZE=16, BLOCK_Q=32, BLOCK_M=128, BLOCK_N=64, BLOCK_D=128, NATIVE_DOT=True)
    return [
        (
            "store bf16 d128 bs16",
            store_kv_kernel,
            "bf16",
            dict(HEAD_DIM=128, BLOCK_SIZE=16, BLOCK_T=16, BLOCK_D=128),
            4,
        ),
        ("store fp32 d16 bs13", store_kv_kernel, "fp32", dict(HEAD_DIM=16, BLOCK_SIZE=13, BLOCK_T=16, BLOCK_D=16), 4),
        ("decode bf16 d128 bs16 g4", paged_decode_kernel, "bf16", dec, 4),
        ("decode bf16 split 32", paged_decode_kernel, "bf16", {**dec, "NUM_SPLITS": 32}, 4),
        (
            "decode fp16 d16 bs1 g1",
            paged_decode_kernel,
            "fp16",
            {**dec, "GROUP": 1, "HEAD_DIM": 16, "BLOCK_D": 16, "BLOCK_SIZE": 1},
            4,
        ),
        (
            "decode fp32 d80 bs256 g7",
            paged_decode_kernel,
            "fp32",
            {**dec, "GROUP": 7, "HEAD_DIM": 80, "BLOCK_SIZE": 256, "NATIVE_DOT": False},
            4,
        ),
        (
            "reduce 32 splits d128",
            paged_decode_reduce_kernel,
            "bf16",
            dict(HEAD_DIM=128, NUM_SPLITS=32, BLOCK_S=32, BLOCK_D=128),
            4,
        ),
        ("prefill bf16 d128 bs16 g4", paged_prefill_kernel, "bf16", pre, 8),
        (
            "prefill fp16 d64 bs5 g2",
            paged_prefill_kernel,
            "fp16",
            {**pre, "GROUP": 2, "HEAD_DIM": 64, "BLOCK_D": 64, "BLOCK_SIZE": 5, "BLOCK_Q": 64},
            8,
        ),
        (
            "prefill fp32 d16 g1 m16",
            paged_prefill_kernel,
            "fp32",
            {
                **pre,
                "GROUP": 1,
                "HEAD_DIM": 16,
                "BLOCK_D": 16,
                "BLOCK_Q": 16,
                "BLOCK_M": 16,
                "BLOCK_N": 16,
                "NATIVE_DOT": False,
            },
            4,
        ),
    ]


# What Triton's JIT would specialise at a real launch: unit (innermost) strides become the constant
# 1, and 16-byte-aligned pointers and strides that are multiples of 16 carry a divisibility hint.
UNIT_STRIDES = {"stride_kd", "stride_vd", "stride_cd", "stride_qd", "stride_od", "stride_btb"}
ALIGNED_STRIDES = {
    "stride_kt",
    "stride_kh",
    "stride_vt",
    "stride_vh",
    "stride_cb",
    "stride_co",
    "stride_ch",
    "stride_qs",
    "stride_qt",
    "stride_qh",
    "stride_os",
    "stride_ot",
    "stride_oh",
}


def _specialise(kernel, dtype: str, constexprs: dict):
    """Signature by naming convention: data pointers carry `dtype`, index pointers int, scalars i32 / fp32."""
    index_ptrs = {
        "block_tables_ptr": "*i32",
        "seq_lens_ptr": "*i32",
        "query_start_loc_ptr": "*i32",
        "slot_mapping_ptr": "*i64",
        "part_out_ptr": "*fp32",
        "part_lse_ptr": "*fp32",
    }
    constexprs = {**constexprs, **{name: 1 for name in kernel.arg_names if name in UNIT_STRIDES}}
    sig, attrs = {}, {}
    for i, name in enumerate(kernel.arg_names):
        if name in constexprs:
            sig[name] = "constexpr"
            continue
        if name in index_ptrs:
            sig[name] = index_ptrs[name]
        elif name.endswith("_ptr"):
            sig[name] = "*" + dtype
        else:
            sig[name] = "fp32" if name == "qk_scale" else "i32"
        if name.endswith("_ptr") or name in ALIGNED_STRIDES:
            attrs[(i,)] = [["tt.divisibility", 16]]
    return sig, constexprs, attrs


def compile_all(arch: int = 90) -> None:
    """Run in a process with TRITON_INTERPRET=0: compile every configuration to a cubin and print its resources."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    target = GPUTarget("cuda", arch, 32)
    for label, kernel, dtype, constexprs, num_warps in _configs():
        sig, consts, attrs = _specialise(kernel, dtype, constexprs)
        src = ASTSource(fn=kernel, signature=sig, constexprs=consts, attrs=attrs)
        compiled = triton.compile(src, target=target, options={"num_warps": num_warps, "num_stages": 2})
        assert compiled.asm.get("cubin"), f"{label}: no cubin"
        if constexprs.get("NATIVE_DOT"):  # 16-bit dots must land on the tensor cores
            assert "mma" in compiled.asm["ptx"], f"{label}: no mma instruction in the PTX"
        print(f"ok  {label:28s} smem={compiled.metadata.shared:6d}  {_ptxas_usage(compiled.asm['ptx'], arch)}")


def _ptxas_usage(ptx: str, arch: int) -> str:
    """Registers and spills as ptxas reports them (the kernel object only knows them once loaded on a GPU)."""
    import re
    import tempfile

    from triton.backends.nvidia.compiler import get_ptxas

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.ptx"
        path.write_text(ptx)
        arch_name = f"sm_{arch}a" if arch >= 90 else f"sm_{arch}"
        res = subprocess.run(
            [get_ptxas(arch).path, "-v", f"--gpu-name={arch_name}", str(path), "-o", str(path) + ".o"],
            capture_output=True,
            text=True,
        )
    regs = re.search(r"Used (\d+) registers", res.stderr)
    spill = re.search(r"(\d+) bytes spill stores", res.stderr)
    return f"regs={regs.group(1) if regs else '?'} spill_stores={spill.group(1) if spill else '?'}B"


def test_kernels_compile_for_sm90():
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(ROOT), "TRITON_DEFAULT_FP_FUSION": "1"}
    proc = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=170, cwd=ROOT)
    if proc.returncode != 0 and "GPUTarget" in proc.stderr and "ImportError" in proc.stderr:
        pytest.skip("this Triton build cannot compile ahead of time for CUDA")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert proc.stdout.count("ok  ") == len(_configs()), proc.stdout


if __name__ == "__main__":
    compile_all()
