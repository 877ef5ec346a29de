"""``python -m tests.benchmarks``: the benchmark run (see :mod:`tests.benchmarks.run`)."""

from tests.benchmarks.run import main

raise SystemExit(main())
