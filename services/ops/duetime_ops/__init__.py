"""`duetime-ops` (or `python -m duetime_ops`): the operator's commands, run where the database
and Kafka are reached, each a thin command line over functions the library keeps:

  migrate                      apply the pending migrations (duetime_infra.pg.migrate)
  admin COMMAND                teams, tokens and quotas (duetime_infra.admin)
  secrets COMMAND              keyrings and re-sealing stored secrets (duetime_infra.secrets)
  groups to-end GROUP [TOPIC]  a Kafka group's offsets at its topics' ends
                               (duetime_infra.kafka.groups)

Nothing imports this package but its tests: the services and the library never run a command.
"""
