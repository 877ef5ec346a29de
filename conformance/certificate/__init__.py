"""The certificate: what a run reports (``report``: report.json, report.md, report.html and the
verdict), the progress lines as it goes (``progress``), the deployment space it covered
(``coverage``), and the matrix of many reports (``matrix``).
"""
