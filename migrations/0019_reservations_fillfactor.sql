-- Room on every page of reservations for a row's next version, so that the allocator's
-- rewrite of queue positions and ETAs (no indexed column changes) is a heap-only update:
-- without it each of 100,000 rewritten rows also inserted into every index of the table
-- (bench/allocator.py: 7.3 s of a 100,000-row pass's UPDATE). New pages only; existing
-- pages gain the room as rows move.
ALTER TABLE reservations SET (fillfactor = 70);
