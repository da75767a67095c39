"""duetime: the command line for Duetime."""
