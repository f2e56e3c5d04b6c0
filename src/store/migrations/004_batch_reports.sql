-- Batch reports (CONTRACT §9, `npm run report`): the last report rendered for each batch, as Markdown and as
-- self-contained HTML, with the summary it showed. Written again (upsert) each time the report is made, so a
-- report made while the batch ran is replaced by the final one. Written for MySQL 8 and MariaDB 10.11; safe to
-- run again after a half-applied attempt. batch_id has the type of agent_batches.batch_id.
CREATE TABLE IF NOT EXISTS batch_reports (
  batch_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  state VARCHAR(16) NOT NULL,
  summary JSON NOT NULL,
  markdown MEDIUMTEXT NOT NULL,
  html MEDIUMTEXT NOT NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (batch_id),
  CONSTRAINT chk_batch_reports_state CHECK (state IN ('running', 'completed'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
