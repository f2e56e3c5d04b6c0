-- The agent a run served (for the console's filters and the batch forecast's history), the usage fields of
-- CONTRACT §11 (cached prompt tokens, reasoning tokens, usage estimated because the endpoint reported none), and
-- the prices the run was billed at, so a later price change never rewrites an old bill. Per step, the same
-- token fields. One ALTER per table, so each applies whole or not at all.
ALTER TABLE agent_runs
  ADD COLUMN agent VARCHAR(64) NULL,
  ADD COLUMN cached_prompt_tokens INT NOT NULL DEFAULT 0,
  ADD COLUMN reasoning_tokens INT NOT NULL DEFAULT 0,
  ADD COLUMN usage_estimated TINYINT(1) NOT NULL DEFAULT 0,
  ADD COLUMN prices JSON NULL,
  ADD KEY idx_agent_runs_agent_model_finished (agent, model, finished_at);

ALTER TABLE agent_steps
  ADD COLUMN cached_prompt_tokens INT NOT NULL DEFAULT 0,
  ADD COLUMN reasoning_tokens INT NOT NULL DEFAULT 0;
