-- One ledger for every side effect (docs/side-effects.md): effect_ledger gains what send_email's email_ledger
-- had, and send_email's rows move into it. `attempt` counts the claims of an effect, so an attempt that lost
-- its claim to a takeover cannot go on; `started_at` is set when the effect is about to start, so a pending row
-- without it proves nothing happened; `ref` is what a tool's lookup asks the far side about (an email's
-- Message-ID); `detail` is the tool's own JSON about the effect (an email's recipient and subject); `failed`
-- rows certainly did not happen and are claimed again; `uncertain` rows are those nothing could tell about.
-- One ALTER, so the change applies whole or not at all (MySQL 8.0.19+ and MariaDB 10.11).
ALTER TABLE effect_ledger
  ADD COLUMN attempt INT NOT NULL DEFAULT 1,
  ADD COLUMN started_at DATETIME(3) NULL,
  ADD COLUMN ref VARCHAR(255) NULL,
  ADD COLUMN detail TEXT NULL,
  ADD COLUMN error TEXT NULL,
  DROP CONSTRAINT chk_effect_ledger_status,
  ADD CONSTRAINT chk_effect_ledger_state CHECK (status IN ('pending', 'done', 'failed', 'uncertain')),
  -- the per-job caps count a job's effects of one tool; the sweeper looks for old pending and uncertain rows
  ADD KEY idx_effect_ledger_job_tool (job_id, tool, status),
  ADD KEY idx_effect_ledger_status_updated (status, updated_at);

-- A row left pending before the upgrade had no start mark, yet its effect may have happened: it counts as
-- started. Its age is kept.
UPDATE effect_ledger SET started_at = created_at, updated_at = updated_at
WHERE status IN ('pending', 'uncertain') AND started_at IS NULL;

-- send_email's rows, with their state, attempt, start mark and age, so emails left pending before the upgrade
-- are still settled by the calls and the sweeper. `sent` and `dry_run` become `done` (the result says which);
-- email_ledger itself is kept as it was and no longer written (docs/side-effects.md). Safe to run again.
INSERT IGNORE INTO effect_ledger
  (effect_key, job_id, tool, status, result, attempt, started_at, ref, detail, error, created_at, updated_at)
SELECT call_key, job_id, 'send_email',
  CASE status WHEN 'sent' THEN 'done' WHEN 'dry_run' THEN 'done' ELSE status END,
  CASE status
    WHEN 'sent' THEN JSON_OBJECT('smtpResponse', smtp_response)
    WHEN 'dry_run' THEN JSON_OBJECT('dryRun', TRUE)
    ELSE NULL END,
  attempt, smtp_started_at, message_id, JSON_OBJECT('recipient', recipient, 'subject', subject), error,
  created_at, updated_at
FROM email_ledger;
