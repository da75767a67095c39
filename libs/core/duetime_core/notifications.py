"""How long a dead-lettered run's notification may still be sent, and so how long the run
entitles a worker to its team's signing keys (``GetSigningKeys``) to sign it.

A notifier retries a notification until its webhook has been failing for the give-up time
(``NOTIFY_GIVE_UP``, the worker's default ``DUETIME_NOTIFY_GIVE_UP_SECONDS``). Before its first
try the event may wait: in the outbox and in Kafka (the relay's and the consumer's lag), and
for a notify slot, which one dead webhook's events can hold for a whole give-up time. Past
``DEAD_LETTER_KEYS_WINDOW`` after the dead-lettering no key is served for it: a worker token
that learns an old dead-lettered run's id does not open its team's keys.
"""

from __future__ import annotations

from datetime import timedelta

# How long a notification's retries go on while its webhook fails (the worker's default).
NOTIFY_GIVE_UP = timedelta(minutes=15)
# The event's way to a notifier's first try: the relay, Kafka's lag, a wait for a slot.
NOTIFY_LAG_MARGIN = NOTIFY_GIVE_UP + timedelta(minutes=30)
# How long after its dead-lettering a run's notification may be signed.
DEAD_LETTER_KEYS_WINDOW = NOTIFY_GIVE_UP + NOTIFY_LAG_MARGIN
