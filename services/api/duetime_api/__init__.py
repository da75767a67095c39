"""The public API service: JobService and AdminService (``servicer``, ``admin_servicer``)
over the rules of ``jobs`` and the stores; ``__main__`` serves them."""
