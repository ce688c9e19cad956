-- The lease's term is a key (a unique index): an UPDATE that changes it, a takeover's, locks the
-- row FOR UPDATE, which waits for the leader's write transaction holding it FOR KEY SHARE (its
-- fence, transactions.ts); the leader's renewals change only expires_at (FOR NO KEY UPDATE) and do
-- not wait behind its own transaction, however long a batch keeps it open.
CREATE UNIQUE INDEX chronolog_lease_term ON chronolog_lease (term);
