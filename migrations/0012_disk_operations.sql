-- Disk operations that happen (gpudev/disks/operations.py, gpudev/disks/purge.py): the jobs
-- consumer makes EBS tags agree with the disk's row, the daily purge deletes the snapshots
-- of disks past their delete_date and then the row.

-- The name the disk's EBS volumes and snapshots are tagged with (`disk_name`) while a rename
-- has not reached them yet; NULL when they carry disk_name. A rename request keeps the
-- oldest such name, so a job that runs after several renames still finds the resources.
ALTER TABLE disks ADD COLUMN tagged_name text;

-- What the purge reads every day: the deleted disks, by date.
CREATE INDEX disks_delete_date_idx ON disks (delete_date) WHERE is_deleted;

-- The purge's runs are recorded beside the other reconcilers'.
ALTER TABLE reconciler_runs DROP CONSTRAINT reconciler_runs_reconciler_check;
ALTER TABLE reconciler_runs ADD CONSTRAINT reconciler_runs_reconciler_check
    CHECK (reconciler IN ('gpu_availability', 'disk_reconciliation', 'sweeper', 'disk_purge'));

-- The API: a rename records the name the tags still carry.
GRANT UPDATE (tagged_name) ON disks TO gpudev_api;
-- A live reservation naming a disk holds it (rename and delete are refused): the API
-- already reads reservations (0006).

-- The jobs consumer (the lifecycle's role; SELECT on disks since 0011) moves the disk's
-- operation along.
GRANT UPDATE (operation_status, operation_error, tagged_name) ON disks TO gpudev_lifecycle;

-- The purge logs in as the reconcilers: deletes the rows whose snapshots are all gone.
GRANT DELETE ON disks TO gpudev_reconcilers;
