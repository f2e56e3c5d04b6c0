-- Calls waiting for a person's decision (docs/approvals.md): one row per call, keyed by an id derived from the
-- call's key and the job's creation time, so a run that parks again after a crash finds its row instead of adding
-- one, and a new job that reuses an id has rows of its own. `state` moves once,
-- from pending to approved, rejected or expired; the decision, who made it, why, the edited arguments and when
-- are kept with it (the audit trail). `arguments_schema` is the tool's JSON Schema when the call was asked, so an
-- edit is checked where the decision is made, without the worker.
CREATE TABLE IF NOT EXISTS agent_approvals (
  id VARCHAR(40) COLLATE utf8mb4_bin NOT NULL,
  job_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  batch_id VARCHAR(64) COLLATE utf8mb4_bin NULL,
  tenant VARCHAR(64) NULL,
  agent VARCHAR(64) NULL,
  step INT NOT NULL,
  call_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  call_key VARCHAR(191) COLLATE utf8mb4_bin NOT NULL,
  tool VARCHAR(64) NOT NULL,
  arguments JSON NOT NULL,
  arguments_schema JSON NULL,
  state VARCHAR(16) NOT NULL DEFAULT 'pending',
  requested_at DATETIME(3) NOT NULL,
  expires_at DATETIME(3) NOT NULL,
  decided_by VARCHAR(128) NULL,
  decision VARCHAR(16) NULL,
  reason TEXT NULL,
  edited_arguments JSON NULL,
  decided_at DATETIME(3) NULL,
  PRIMARY KEY (id),
  KEY idx_agent_approvals_call (call_key),
  KEY idx_agent_approvals_job (job_id),
  KEY idx_agent_approvals_state_requested (state, requested_at),
  KEY idx_agent_approvals_batch_state (batch_id, state),
  CONSTRAINT chk_agent_approvals_state CHECK (state IN ('pending', 'approved', 'rejected', 'expired')),
  CONSTRAINT chk_agent_approvals_decision CHECK (decision IS NULL OR decision IN ('approve', 'reject'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
