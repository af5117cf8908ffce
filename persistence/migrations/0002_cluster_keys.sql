-- 0002: secrets every member of a cluster must share (the ticket-signing key,
-- the admin token), created once by whichever member starts first.
--
-- A purpose has generations 1, 2, 3, ...; the newest generation whose
-- active_from has passed is the one to use, newer ones are published but not
-- yet used (every member learns them before anyone signs with them), older
-- ones are still accepted for an overlap window after their successor became
-- active. The primary key makes creation and rotation race-free: of two
-- members inserting the same generation, exactly one succeeds.
CREATE TABLE cluster_keys (
    purpose     text        NOT NULL,
    generation  bigint      NOT NULL CHECK (generation > 0),
    secret      bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    active_from timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (purpose, generation)
);
