"""The sweeper: repairs what a failed lifecycle left behind (executions that ended without
tearing down, objects of ended reservations, pending reservations nobody started). Pure
decisions in plan.py, reads and writes in service.py, wiring in runtime.py."""
