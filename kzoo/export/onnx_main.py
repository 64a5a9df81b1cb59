"""Exports saved copies' ONNX graphs on the torch backend (used by onnx):
``python -m kzoo.export.onnx_main MODULE:CLASS COPY FILE [...]``, one
triple per graph."""

import sys

from kzoo.export.onnx import main

if __name__ == "__main__":
    main(sys.argv[1:])
