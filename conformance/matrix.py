"""Public: ``python -m conformance.matrix cert/*/report.json --markdown docs/matrix.md``, the
conformance matrix of certification reports (README). The code lives in
:mod:`conformance.certificate.matrix`.
"""

import sys

from conformance.certificate.matrix import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
