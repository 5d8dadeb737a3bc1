"""qkov.simulation: numerical integration of the ODEs that :mod:`theory` derives."""
