-- Notes across tasks (docs/notes.md): what an agent learned in one run, kept for the next runs of the same agent
-- and tenant ('' for tasks without one; a note is never read for another tenant). `id` derives from the agent, the
-- tenant and the hash of the text, and (agent, tenant, text_hash) is unique: the same note written again renews
-- its expiry instead of adding a row. `embedding` is NULL without an embedding model; the FULLTEXT index serves
-- search then. `weight` starts at 1 and halves each time a run that used the note fails.
CREATE TABLE IF NOT EXISTS agent_notes (
  id VARCHAR(40) COLLATE utf8mb4_bin NOT NULL,
  agent VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  tenant VARCHAR(64) COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  kind VARCHAR(16) NOT NULL,
  text TEXT NOT NULL,
  text_hash CHAR(64) COLLATE utf8mb4_bin NOT NULL,
  embedding JSON NULL,
  source_job_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  source_step INT NOT NULL,
  created_at DATETIME(3) NOT NULL,
  last_used_at DATETIME(3) NULL,
  use_count INT NOT NULL DEFAULT 0,
  weight DOUBLE NOT NULL DEFAULT 1,
  expires_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_agent_notes_text (agent, tenant, text_hash),
  KEY idx_agent_notes_scope_expiry (agent, tenant, expires_at),
  KEY idx_agent_notes_created (created_at),
  FULLTEXT KEY ft_agent_notes_text (text),
  CONSTRAINT chk_agent_notes_kind CHECK (kind IN ('fact', 'correction', 'model'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
