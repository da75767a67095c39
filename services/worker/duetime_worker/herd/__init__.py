"""What shapes the worker's load when thousands of runs come due at once: the fair ``slots``
runs and calls wait in, the shared ``timers`` that end those waits, the herd ``state`` (calls
due and not sent yet; while there are any, reports that may wait do, and so do full
heartbeats) and the garbage collector's pause (``gc_pause``). Imports nothing of the worker."""
