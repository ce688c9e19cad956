-- The principals of the owner that took the lease last, as a fingerprint ('' : it required no
-- token): an owner without principals refuses to join a database whose owners require tokens.
ALTER TABLE chronolog_lease ADD COLUMN auth TEXT NOT NULL DEFAULT '';
