"""Reference models shipped with the atlas. The generator never special-cases them."""
