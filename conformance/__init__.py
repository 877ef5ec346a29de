"""hicache-conformance: certify SGLang HiCache v2 storage backends."""

__version__ = "0.1.0"
