"""Exports a saved copy's ONNX graph on the torch backend (used by onnx)."""

import sys

from kzoo.export.onnx import main

main(sys.argv[1:])
