"""The shared store's schema, owned by the project: numbered migrations applied at start.

Every worker runs ``migrate`` when it opens the store. One transaction holds a transaction
advisory lock, so workers starting together apply each migration once; a database whose schema
is newer than this zkpipe knows is refused (an old worker must not write a newer layout).
Add a migration by appending ``(next number, name, SQL)``; never edit one that has shipped.
"""
from __future__ import annotations

from ...errors import Unavailable

ADVISORY_LOCK_ID = 0x7A6B7069  # "zkpi": any constant the database's other users do not take

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "jobs, partitions with leases, partition inputs, workers", """
CREATE TABLE jobs (
    seq             bigserial UNIQUE,
    job_id          text PRIMARY KEY,
    request_id      text UNIQUE,
    key_id          text NOT NULL,
    priority        text NOT NULL,
    input_kind      text NOT NULL CHECK (input_kind IN ('wtns', 'inputs')),
    n_partitions    integer NOT NULL CHECK (n_partitions > 0),
    state           text NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    created_at      double precision NOT NULL,          -- epoch seconds, the database's clock
    started_at      double precision,
    finished_at     double precision,
    partitions_done integer NOT NULL DEFAULT 0,
    error_code      text,
    error_message   text,
    timings         jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX jobs_state ON jobs (state, seq);
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;

-- Fencing tokens: every claim takes a new one; only the current holder's result is stored.
CREATE SEQUENCE lease_tokens;

CREATE TABLE partitions (
    job_id           text NOT NULL REFERENCES jobs ON DELETE CASCADE,
    idx              integer NOT NULL,
    key_id           text NOT NULL,
    priority_rank    smallint NOT NULL,                 -- 0 = critical ... 3 = low
    job_seq          bigint NOT NULL,                   -- arrival order
    state            text NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'leased', 'done', 'failed', 'cancelled')),
    enqueued_at      timestamptz NOT NULL DEFAULT now(),
    in_shared_spool  boolean NOT NULL DEFAULT false,    -- only workers with the shared spool claim it
    attempts         integer NOT NULL DEFAULT 0,
    lease_owner      text,
    lease_token      bigint,
    lease_expires_at timestamptz,
    stored_by        text,                              -- the worker whose proof was stored
    result           jsonb,                             -- {"proof": ..., "public_signals": ...}
    timings          jsonb,
    error            text,
    PRIMARY KEY (job_id, idx)
);
CREATE INDEX partitions_queued ON partitions (priority_rank, job_seq, idx) WHERE state = 'queued';
CREATE INDEX partitions_leased ON partitions (lease_expires_at) WHERE state = 'leased';
CREATE INDEX partitions_tokens ON partitions (lease_token) WHERE state = 'leased';

-- What each partition proves (a .wtns or one circuit-inputs object): in the row up to
-- max_db_partition_bytes, else a file in the shared spool folder. Deleted once it is proved.
CREATE TABLE partition_inputs (
    job_id     text NOT NULL,
    idx        integer NOT NULL,
    data       bytea,
    spool_file text,                                    -- relative to shared_spool_dir
    PRIMARY KEY (job_id, idx),
    FOREIGN KEY (job_id, idx) REFERENCES partitions ON DELETE CASCADE,
    CHECK ((data IS NULL) <> (spool_file IS NULL))
);
-- Field elements do not compress: store out of line without trying pglz on every witness.
ALTER TABLE partition_inputs ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE workers (
    worker_id     text PRIMARY KEY,
    host          text NOT NULL,
    pid           integer NOT NULL,
    state         text NOT NULL,                        -- running | draining | stopped
    started_at    timestamptz NOT NULL DEFAULT now(),
    heartbeat_at  timestamptz NOT NULL DEFAULT now(),
    devices       jsonb NOT NULL DEFAULT '[]',
    served_keys   text[] NOT NULL DEFAULT '{}',
    resident_keys text[] NOT NULL DEFAULT '{}',
    held          integer NOT NULL DEFAULT 0,
    counters      jsonb NOT NULL DEFAULT '{}'
);
"""),
)
LATEST = MIGRATIONS[-1][0]


class SchemaTooNew(Unavailable):
    """The database was migrated by a newer zkpipe: this worker cannot use it until upgraded."""


async def migrate(conn) -> list[int]:
    """Apply every migration the database lacks, in order; return the versions applied."""
    applied_now = []
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", ADVISORY_LOCK_ID)
        await conn.execute("CREATE TABLE IF NOT EXISTS zkpipe_schema (version integer PRIMARY KEY, name text NOT NULL,"
                           " applied_at timestamptz NOT NULL DEFAULT now())")
        applied = {row[0] for row in await conn.fetch("SELECT version FROM zkpipe_schema")}
        if applied and max(applied) > LATEST:
            raise SchemaTooNew(f"the database's zkpipe schema is version {max(applied)}, newer than this zkpipe's "
                               f"{LATEST}: upgrade this worker")
        for version, name, sql in MIGRATIONS:
            if version not in applied:
                await conn.execute(sql)
                await conn.execute("INSERT INTO zkpipe_schema (version, name) VALUES ($1, $2)", version, name)
                applied_now.append(version)
    return applied_now
