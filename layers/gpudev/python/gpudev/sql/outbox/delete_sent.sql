-- The API sent this outbox row's job after its commit: nothing is left for the relay.
DELETE FROM outbox WHERE outbox_id = %(outbox_id)s
