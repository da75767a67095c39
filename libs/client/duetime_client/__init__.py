"""What Duetime's own clients of the public API share (the ``duetime`` CLI, the console): the
details of an error status read into fields (``status``), and short text for the contract's
values (``describe``). Only the generated code and gRPC below it: no server-side code."""
