"""The pure domain: schedules (``schedule``: next_fire_time, cron, DST), planning and misfire,
attempts and their state rules, backoff, quotas and fairness, partitions, records, errors. No
I/O and no proto: everything here takes its clock and randomness as arguments."""
