"""Servers and meters a run needs beside the backend: services on loopback stopped by pid
(``services``), S3 servers (``s3server``, Ceph's gateway in ``rgw``), and a folder's peak size
sampled by a process of its own (``folder_peak``). They import only the model.
"""
