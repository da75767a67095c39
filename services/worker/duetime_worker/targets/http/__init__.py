"""HTTP targets: the ``caller``, its pinned clients and connection slots for each host
(``hosts``), and the operators' ``allow_list`` of addresses."""
