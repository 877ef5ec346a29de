"""The model of the interface: what a backend receives and declares, and what it must answer.

SGLang's types (``interface``) and SGLang itself where installed (``sglang``), a backend's claims
(``capabilities``), the semantics of exists and hits in plain Python (``oracle``), which ranks share
an entry (``sharing``), and the contract as documentation (``contract``). Imports nothing else of
``conformance``.
"""
