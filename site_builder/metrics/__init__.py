"""Pure metric code: DataFrames and dataclasses in, DataFrames and dataclasses out."""
