"""Equations derived from module code, printed to LaTeX and evaluated with torch to check them."""
