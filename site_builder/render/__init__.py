"""Turning metric results into pages: pure page contexts and charts, and one writer."""
