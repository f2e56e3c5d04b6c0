-- Settling send_email's pending rows (docs/side-effects.md). `attempt` counts the claims of a call, so an attempt
-- that lost its claim to a takeover cannot go on and send; `smtp_started_at` is set just before the SMTP
-- transaction, so a row without it proves its attempt never reached the server; `uncertain` is the state of a
-- row whose outcome nothing could tell (no delivery lookup, or it failed), kept for the sweeper and the reports.
-- One ALTER, so the change applies whole or not at all (MySQL 8.0.19+ and MariaDB 10.11).
ALTER TABLE email_ledger
  ADD COLUMN attempt INT NOT NULL DEFAULT 1,
  ADD COLUMN smtp_started_at DATETIME(3) NULL,
  DROP CONSTRAINT chk_email_ledger_status,
  ADD CONSTRAINT chk_email_ledger_state CHECK (status IN ('pending', 'sent', 'dry_run', 'failed', 'uncertain')),
  -- the sweeper looks for old pending and uncertain rows
  ADD KEY idx_email_ledger_status_updated (status, updated_at);
