-- Whom a run was for (the task's `tenant`), for the batch report's per-tenant lines and the console's filter.
-- NULL for runs of tasks without one and rows written before. One ALTER.
ALTER TABLE agent_runs
  ADD COLUMN tenant VARCHAR(64) NULL,
  ADD KEY idx_agent_runs_tenant_started (tenant, started_at);
