"""Exports a saved copy's ONNX graph on the torch backend (used by onnx):
``python -m kzoo.export.onnx_main MODULE:CLASS COPY FILE``."""

import sys

from kzoo.export.onnx import main

if __name__ == "__main__":
    main(sys.argv[1:])
