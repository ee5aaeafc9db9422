"""Attention kernels over pykv's paged KV cache, each beside the torch reference it must match.

Importing this package does nothing: ``pykv_kernels.reference``, ``pykv_kernels.torch_paged`` (the engine's ``torch``
backend) and the torch-only helpers never import triton nor touch the environment.

Where Triton's interpreter gets switched on, and why there
----------------------------------------------------------
``@triton.jit`` decides, when it decorates a kernel (i.e. when the kernel's module is imported),
whether the kernel is compiled for the GPU or run by Triton's CPU interpreter; it decides from the
environment variable ``TRITON_INTERPRET`` (older Triton releases read it once, at ``import
triton``). A kernel defined in compiled mode cannot run on CPU tensors later. So the variable must
be set *before* ``triton`` is imported and before any kernel module is imported.

The one door into Triton is ``pykv_kernels.triton_utils``: it calls
``launch_utils.use_interpreter_without_cuda()`` and only then imports triton, and every kernel module
(``store_kv``, ``paged_decode``, ``paged_prefill``) takes ``triton`` and ``tl`` from it. So every path
to a kernel (the engine's ``"triton"`` backend, the tests, the benchmarks, ``python -m
pykv_kernels.<kernel>``) switches the interpreter on first, and a process that never chooses the Triton
backend (``import pykv``, the ``torch`` backend, a headless ``auto`` on CPU) keeps its environment as it
was. The app, whose Playground and Lessons run ``auto`` as interpreted Triton on a CPU, switches it on at
start-up (``pykv.engine.model.attention.prepare_stepwise_attention``), before loading the model imports triton.

Under the interpreter the decode and prefill launchers pick a CPU launch configuration
(``paged_batched``, planned by ``batched_plan``); ``launch_record`` keeps what each launch was.
On a machine with CUDA nothing changes; without CUDA the interpreter is switched on unless the user
set ``TRITON_INTERPRET`` explicitly (their choice wins).
"""
