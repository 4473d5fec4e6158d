-- `gpu-dev disk clone SRC DST` (issue #34): DST's row records the disk it was cloned from.
-- Its clone job copies SRC's latest completed snapshot, tagged as DST's
-- (gpudev/disks/clone.py); the copy is DST's own, so SRC's deletion and purge leave it.
-- No foreign key: SRC's row goes at its purge, DST stays.
ALTER TABLE disks ADD COLUMN cloned_from uuid;
