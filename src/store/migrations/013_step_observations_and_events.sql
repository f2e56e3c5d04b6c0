-- What the run console shows of a step beyond CONTRACT §8's columns: the observation of each tool call apart
-- (the `observation` column joins them with newlines, which the observations themselves contain), the time the
-- step's model calls took, and the loop's folds and budget decisions (StepTrace.events). NULL in rows written
-- before. One ALTER, so it applies whole or not at all.
ALTER TABLE agent_steps
  ADD COLUMN observations JSON NULL,
  ADD COLUMN model_latency_ms INT NULL,
  ADD COLUMN events JSON NULL;
