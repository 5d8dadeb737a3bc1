"""qkov.theory: the symbolic gradient flow of the orthogonal synthetic model (MODEL.md)."""
