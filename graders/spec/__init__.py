"""Exercise files: parsing, validation, formulas and input layouts."""
