"""Small shared test helpers (used by tests/ on every backend)."""

from kzoo.testing.test_case import (  # noqa: F401
    assert_all_equal,
    assert_allclose,
    gradient,
    on_both_engines,
    run_backbone_test,
    run_preprocessing_layer_test,
    run_saving_test,
    to_numpy,
)
from kzoo.testing.without_tensorflow import (  # noqa: F401
    check_without_tensorflow,
    run_without_tensorflow,
)
