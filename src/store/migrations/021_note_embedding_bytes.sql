-- A note's embedding as float32 bytes (src/notes/embedding-bytes.ts) instead of JSON: a similarity recall reads
-- up to 1,000 of them at a run's start, and parsing their JSON took about 240 ms of the worker's CPU. Embeddings
-- kept as JSON before are dropped, not converted (SQL cannot write float32): a note gets its embedding again when
-- a run learns it again, and until then it is found by FULLTEXT and the fill, as a note without one always is.
-- One ALTER, applied whole or not at all.
ALTER TABLE agent_notes
  DROP COLUMN embedding,
  ADD COLUMN embedding MEDIUMBLOB NULL AFTER text_hash;
