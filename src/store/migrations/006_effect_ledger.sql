-- The ledger behind ToolContext.once (docs/agents-and-tools.md): any tool with side effects claims a row, keyed
-- by its call key (stable across retries and resumes) and its own key, before the effect, and records the
-- effect's value after it. A later attempt that finds `done` gets the value back; one that finds `pending` knows
-- an earlier attempt stopped between the effect and its record, and does not run it again.
CREATE TABLE IF NOT EXISTS effect_ledger (
  effect_key VARCHAR(191) COLLATE utf8mb4_bin NOT NULL,
  job_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  tool VARCHAR(64) NOT NULL,
  status VARCHAR(16) NOT NULL,
  result MEDIUMTEXT NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (effect_key),
  KEY idx_effect_ledger_job (job_id),
  CONSTRAINT chk_effect_ledger_status CHECK (status IN ('pending', 'done'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
