-- 0001: matches, their append-only logs, snapshots, and used tickets.
-- Match ids use the "C" collation: ListUnfinished pages in byte order, the
-- same order the embedded store uses, whatever the database's locale.

-- One row per match. epoch is the fencing token (0 = never claimed) and the
-- row is the lock every fenced write takes. last_seq mirrors the highest seq
-- in match_log so the gap check is one compare on the locked row and keeps
-- working once a log prefix is pruned.
CREATE TABLE matches (
    match_id   text        COLLATE "C" PRIMARY KEY,
    meta       bytea       NOT NULL,
    epoch      bigint      NOT NULL DEFAULT 0,
    owner      text        NOT NULL DEFAULT '',
    finished   boolean     NOT NULL DEFAULT false,
    last_seq   bigint      NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- ListUnfinished pages through this; finished matches drop out of it.
CREATE INDEX matches_unfinished_idx ON matches (match_id) WHERE NOT finished;

-- The primary key makes a second writer of one seq fail even if fencing
-- were bypassed. epoch records which activation wrote the entry.
CREATE TABLE match_log (
    match_id text   COLLATE "C" NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    seq      bigint NOT NULL CHECK (seq > 0),
    epoch    bigint NOT NULL,
    payload  bytea  NOT NULL,
    PRIMARY KEY (match_id, seq)
);

-- The latest snapshot only; older ones are replaced.
CREATE TABLE match_snapshots (
    match_id text        COLLATE "C" PRIMARY KEY REFERENCES matches (match_id) ON DELETE CASCADE,
    seq      bigint      NOT NULL CHECK (seq >= 0),
    epoch    bigint      NOT NULL,
    data     bytea       NOT NULL,
    saved_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE used_tickets (
    ticket_id  text        PRIMARY KEY,
    expires_at timestamptz NOT NULL
);

CREATE INDEX used_tickets_expires_idx ON used_tickets (expires_at);
