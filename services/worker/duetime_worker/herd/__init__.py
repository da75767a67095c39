"""What shapes the worker's load when thousands of runs come due at once. The ``governor``
owns what a herd changes (the call backlog, the garbage collector's pause, held beats and
reports, the lease watches' timer heap); ``slots`` has the one shape of concurrency limit,
``timers`` the waits that end by a deadline, ``knobs`` every constant that shapes a herd.
Imports nothing of the worker's other rooms."""
