"""``rageval report RUN --html OUT.html``: one self-contained HTML file with the Findings story (to be written)."""
