"""The lifecycle's public events (docs/notifications.md): what happens to a reservation,
written to `bus_events` by the row change itself (migrations/0039_bus_events.sql) and put on
the EventBridge bus `gpu-dev` by the event relay (relay.py), in the shape
`reservation-event.v1.schema.json` documents (catalogue.py names its parts)."""
