"""The reference HiCache v2 storage backend: NIXL POSIX file targets, one transfer a batch."""

__version__ = "0.1.0"
