"""rageval's version: a leaf module, so the engine's modules that stamp it into what they write import it without
reaching the package face (``rageval/__init__.py``, which also reaches the notebook API)."""

__version__ = "0.1.0"
