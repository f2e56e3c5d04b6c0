-- Batches (CONTRACT §9): a set of tasks run as one unit, with an optional budget of its own. Each task is also
-- an ordinary run in agent_runs, whose batch_id points here. The summary is filled when the batch completes.
CREATE TABLE IF NOT EXISTS agent_batches (
  batch_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  name VARCHAR(200) NULL,
  tasks INT NOT NULL,
  job_ids JSON NOT NULL,
  max_cost_usd DECIMAL(16, 10) NULL,
  max_tokens BIGINT NULL,
  state VARCHAR(16) NOT NULL DEFAULT 'running',
  summary JSON NULL,
  created_at DATETIME(3) NOT NULL,
  completed_at DATETIME(3) NULL,
  PRIMARY KEY (batch_id),
  KEY agent_batches_created (created_at)
);
