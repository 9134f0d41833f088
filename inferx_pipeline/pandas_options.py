"""pandas as the project runs it: ``str`` columns keep Python storage.

pyarrow is installed for ADBC's columnar reads of SQLite (``results.reader``), and under
pandas 3 its mere presence switches the default storage of every ``str`` column (and of
categories) to Arrow. The leaderboard works on many small frames, where Arrow storage's
per-call overheads cost the site's write about a fifth more CPU (measured on the 1M-row
build: 4.6 s against 3.7 s). Imported by the packages that use pandas
(``inferx_pipeline.results``, ``inferx_pipeline.leaderboard``) before any frame exists.
"""

from __future__ import annotations

import pandas as pd

pd.set_option("mode.string_storage", "python")
