"""The dashboard's shared code: ``data`` (the cached data layer) and ``render`` (display helpers).

Pages stay thin: read widgets, call ``ui.data``, render with ``ui.render``. The engine (``rageval``) never
imports this package or streamlit.
"""
