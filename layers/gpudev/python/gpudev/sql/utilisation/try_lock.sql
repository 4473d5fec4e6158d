-- One utilisation write at a time (two updater runs may overlap): the samples' weights,
-- the rollups and the idle decisions of a run are made against what the previous run
-- wrote, so a warning or an ending is recorded once. Released when the transaction ends;
-- a run that does not get it leaves utilisation to the run that holds it.
SELECT pg_try_advisory_xact_lock(%(key)s)
