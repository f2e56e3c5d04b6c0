-- What the run console shows of a step beyond CONTRACT §8's columns: the observation of each tool call apart
-- (the `observation` column joins them with newlines, which the observations themselves contain), the time the
-- step's model calls took, and the loop's folds and budget decisions (StepTrace.events). NULL in rows written
-- before. And the console's list of runs, newest first, without sorting the whole table. One ALTER per table,
-- so each applies whole or not at all.
ALTER TABLE agent_steps
  ADD COLUMN observations JSON NULL,
  ADD COLUMN model_latency_ms INT NULL,
  ADD COLUMN events JSON NULL;

ALTER TABLE agent_runs ADD KEY idx_agent_runs_started (started_at);
