"""The report a grading produces: its types, schema, figures and roofline."""
