"""Exports a saved copy on the TensorFlow backend (used by saved_model)."""

import sys

from kzoo.export.saved_model import main

main(sys.argv[1:])
