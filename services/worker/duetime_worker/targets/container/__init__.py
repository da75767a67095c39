"""Container targets: the ``launcher`` interface with its disabled and local-process kinds,
``podman``, the sweep of containers an earlier worker left (``orphans``), and the operators'
allow-list of ``images``."""
