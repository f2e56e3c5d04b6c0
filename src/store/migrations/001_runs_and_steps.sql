-- Runs and their step traces (CONTRACT §8). Written for both MySQL 8 and MariaDB 10.11: JSON is a real type
-- on MySQL and a checked LONGTEXT on MariaDB, and utf8mb4_unicode_ci is a collation both servers have.
-- DDL is not transactional, so every statement must be safe to run again after a half-applied attempt.
-- Job and batch ids compare byte for byte: BullMQ ids are case-sensitive.

CREATE TABLE IF NOT EXISTS agent_runs (
  job_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  batch_id VARCHAR(64) COLLATE utf8mb4_bin NULL,
  task TEXT NOT NULL,
  model VARCHAR(100) NOT NULL,
  protocol VARCHAR(10) NOT NULL,
  status VARCHAR(16) NOT NULL,
  stop_reason VARCHAR(32) NULL,
  answer MEDIUMTEXT NULL,
  steps INT NOT NULL DEFAULT 0,
  tool_calls INT NOT NULL DEFAULT 0,
  prompt_tokens INT NOT NULL DEFAULT 0,
  completion_tokens INT NOT NULL DEFAULT 0,
  total_tokens INT NOT NULL DEFAULT 0,
  cost_usd DECIMAL(16,10) NOT NULL DEFAULT 0,
  error JSON NULL,
  metadata JSON NULL,
  attempts INT NOT NULL DEFAULT 1,
  started_at DATETIME(3) NOT NULL,
  finished_at DATETIME(3) NULL,
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (job_id),
  KEY idx_agent_runs_batch (batch_id),
  KEY idx_agent_runs_status_started (status, started_at),
  CONSTRAINT chk_agent_runs_status CHECK (status IN ('running', 'succeeded', 'stopped', 'failed'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- No foreign key to agent_runs: trace writes stay cheap and never wait on the run row's lock.
CREATE TABLE IF NOT EXISTS agent_steps (
  id BIGINT NOT NULL AUTO_INCREMENT,
  job_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  step INT NOT NULL,
  kind VARCHAR(16) NOT NULL,
  action JSON NOT NULL,
  observation MEDIUMTEXT NOT NULL,
  prompt_tokens INT NOT NULL DEFAULT 0,
  completion_tokens INT NOT NULL DEFAULT 0,
  cost_usd DECIMAL(16,10) NOT NULL DEFAULT 0,
  latency_ms INT NOT NULL DEFAULT 0,
  model_calls INT NOT NULL DEFAULT 0,
  error TEXT NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  UNIQUE KEY uq_agent_steps_job_step (job_id, step)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
