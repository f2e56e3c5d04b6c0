-- Why a budget stopped a run, in numbers (the result's stopDetail: what was left, what the next call needed, and
-- for a fleet scope what other jobs held reserved). NULL for runs no budget stopped. One ALTER.
ALTER TABLE agent_runs ADD COLUMN stop_detail VARCHAR(2000) NULL;
