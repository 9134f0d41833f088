"""Results: normalized rows, the store, and set-based reads of it into frames."""

from inferx_pipeline import pandas_options as _pandas_options  # noqa: F401  before any frame
