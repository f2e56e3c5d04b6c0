-- The ledger of send_email (CONTRACT §7: at most once per job and call, however often the job is retried).
-- A row is claimed (pending) before the SMTP transaction and settled after it (sent, dry_run or failed), so a
-- retry or resume of the same call finds it by call_key and does not send again. Written for MySQL 8 and
-- MariaDB 10.11; safe to run again after a half-applied attempt.
-- call_key is `<jobId>:<step>:<n>`: 191 characters of utf8mb4 fit any index prefix limit, and it compares
-- byte for byte like the job ids it contains.

CREATE TABLE IF NOT EXISTS email_ledger (
  call_key VARCHAR(191) COLLATE utf8mb4_bin NOT NULL,
  job_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  recipient VARCHAR(254) NOT NULL,
  subject TEXT NOT NULL,
  message_id VARCHAR(255) NOT NULL,
  status VARCHAR(16) NOT NULL,
  smtp_response TEXT NULL,
  error TEXT NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (call_key),
  -- the per-job cap counts a job's rows by status
  KEY idx_email_ledger_job_status (job_id, status),
  CONSTRAINT chk_email_ledger_status CHECK (status IN ('pending', 'sent', 'dry_run', 'failed'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
