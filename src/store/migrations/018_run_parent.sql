-- The parent of a child agent's run (docs/child-agents.md): the job that called it, so the console and
-- `npm run trace` show a tree with links both ways. NULL for a run no agent called, and rows written before.
ALTER TABLE agent_runs
  ADD COLUMN parent_job_id VARCHAR(64) COLLATE utf8mb4_bin NULL,
  ADD KEY idx_agent_runs_parent (parent_job_id);
