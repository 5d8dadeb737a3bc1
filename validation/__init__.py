"""qkov.validation: torch training on synthetic and real data, held against the theory."""
