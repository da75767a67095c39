"""PostgreSQL: one store module per aggregate (jobs, attempts, claims, outbox, teams, quotas),
each running the named queries of ``queries/*.sql``; ``pool`` for connections and
transactions, ``migrate`` for the numbered migrations."""
