"""Reading PGN collections into game records, with every problem collected."""
