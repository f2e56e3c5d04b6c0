-- A store that stays bounded (docs/store.md#retention): the store sweeper deletes step traces of runs finished
-- more than STORE_KEEP_STEPS_DAYS ago and marks their run, so the console and `npm run trace` say the steps are
-- gone instead of showing an empty timeline. NULL: the steps are kept (or the run never had any). The key on
-- finished_at lets the sweeper find old runs without reading the table. One ALTER, applied whole or not at all.
ALTER TABLE agent_runs
  ADD COLUMN steps_deleted_at DATETIME(3) NULL,
  ADD KEY idx_agent_runs_finished (finished_at);
