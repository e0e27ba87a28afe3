"""One step of making the embedding model's ONNX files, run as a child process:
``python -m assistant.embedding.export_step export|quantize SOURCE TARGET``.

Why a process of its own: tracing the model imports torch and transformers (close to 800 MB on two cores)
and quantizing holds the graph more than once; a build or a first start that did either in its own process
would keep that memory to its end. :func:`assistant.embedding.onnx.run_step` starts it and waits.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .onnx import export_onnx, quantize_onnx

STEPS = {"export": export_onnx, "quantize": quantize_onnx}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or args[0] not in STEPS:
        print(f"usage: python -m assistant.embedding.export_step {{{'|'.join(STEPS)}}} SOURCE TARGET", file=sys.stderr)
        return 2
    step, source, target = args
    STEPS[step](Path(source), Path(target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
