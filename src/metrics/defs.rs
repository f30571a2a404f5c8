//! What each of the agent's own metrics is called, what its help text
//! says and which labels it has, grouped by what it counts; `Metrics::new`
//! registers them. (The `metrics` stages' metrics are in `custom.rs`,
//! Promtail's names in `promtail.rs`.)

/// One metric's name, help text and label names.
pub(super) struct Def {
    pub name: &'static str,
    pub help: &'static str,
    pub labels: &'static [&'static str],
}

// Lines, per source.
pub(super) const LINES_READ: Def =
    Def { name: "tailship_source_lines_total", help: "Lines read, per source.", labels: &["source"] };
pub(super) const BYTES_READ: Def =
    Def { name: "tailship_source_bytes_total", help: "Bytes read, per source.", labels: &["source"] };
pub(super) const LINES_DROPPED: Def = Def {
    name: "tailship_lines_dropped_total",
    help: "Lines not delivered on purpose, by reason (drop_stage: a drop stage matched; limit: over a limit stage's rate; rejected: the service refused the batch with a 4xx other than 429; retries_exhausted: client.retry.max_retries ran out; journal_no_message, journal_unparsable, journal_oversized: journal entries without MESSAGE, not JSON, or over 8 x max_line_bytes).",
    labels: &["source", "reason"],
};
pub(super) const LINES_REPAIRED: Def = Def {
    name: "tailship_lines_repaired_total",
    help: "Lines changed before sending, by reason (invalid_utf8: replacement characters; truncated: over max_line_bytes; multiline_max: a multiline entry cut at max_lines; journal_binary: a journal MESSAGE given as bytes, decoded; stream_limit: the stages' labels left off at the source's max_streams; invalid_tenant: a tenant stage's value the service would refuse, the source's tenant kept).",
    labels: &["source", "reason"],
};
pub(super) const LINES_UNPARSED: Def = Def {
    name: "tailship_lines_unparsed_total",
    help: "Lines a parsing stage (json, logfmt, cri, docker) could not parse; they went on unchanged.",
    labels: &["source", "stage"],
};

// Pushes, per client.
pub(super) const LINES_PUSHED: Def = Def {
    name: "tailship_push_lines_total",
    help: "Lines acknowledged by the service, per client.",
    labels: &["client"],
};
pub(super) const BYTES_PUSHED: Def = Def {
    name: "tailship_push_bytes_total",
    help: "Bytes acknowledged, per client: raw line bytes, and request bytes on the wire.",
    labels: &["client", "kind"],
};
pub(super) const PUSH_REQUESTS: Def = Def {
    name: "tailship_push_requests_total",
    help: "Push requests per client, by outcome: the HTTP status, or `error` for transport failures.",
    labels: &["client", "status"],
};
pub(super) const PUSH_RETRIES: Def = Def {
    name: "tailship_push_retries_total",
    help: "Push attempts that were retried, per client.",
    labels: &["client"],
};
pub(super) const PUSH_LINES_FOUND: Def = Def {
    name: "tailship_push_lines_found_stored_total",
    help: "Lines of pushes whose answer was lost that a lookup found stored, so they were not sent again, per client.",
    labels: &["client"],
};
pub(super) const LOOKUPS: Def = Def {
    name: "tailship_lookup_requests_total",
    help: "Queries made to look up lines whose delivery was unsure (read again after a restart, or a push whose answer was lost), per client.",
    labels: &["client"],
};

// Queues, per client.
pub(super) const QUEUE_BYTES: Def = Def {
    name: "tailship_queue_bytes",
    help: "Bytes of lines read and not yet acknowledged, per client (each has its own queue).",
    labels: &["client"],
};
pub(super) const QUEUE_LINES: Def =
    Def { name: "tailship_queue_lines", help: "Lines read and not yet acknowledged, per client.", labels: &["client"] };
pub(super) const QUEUE_MAX_BYTES: Def = Def {
    name: "tailship_queue_max_bytes",
    help: "The byte budget of each client's queue (queue.max_bytes): sources stop reading when tailship_queue_bytes reaches it.",
    labels: &["client"],
};
pub(super) const READY: Def = Def {
    name: "tailship_ready",
    help: "1 when /ready answers 200 (sources started, positions written, every client's last push succeeded), else 0.",
    labels: &[],
};

// Files and streams, per source.
pub(super) const FILES_OPEN: Def =
    Def { name: "tailship_files_open", help: "Files held open, per source.", labels: &["source"] };
pub(super) const STREAMS: Def = Def {
    name: "tailship_streams",
    help: "Streams (label sets) held now: a stream is freed once its files are gone and its lines were batched.",
    labels: &[],
};
pub(super) const DIRS_POLLED: Def = Def {
    name: "tailship_dirs_polled",
    help: "Directories a file source polls because they cannot be watched (the others get events).",
    labels: &["source"],
};
pub(super) const FILES_UNREAD_BYTES: Def = Def {
    name: "tailship_files_unread_bytes",
    help: "Bytes in tailed files not yet read, per source.",
    labels: &["source"],
};
pub(super) const FILE_EVENTS: Def = Def {
    name: "tailship_file_events_total",
    help: "File lifecycle events: opened, rotated, truncated, deleted, closed, unreadable, corrupt (a compressed file that cannot be decompressed to its end).",
    labels: &["source", "event"],
};
pub(super) const FILES_RECOVERED: Def = Def {
    name: "tailship_files_recovered_total",
    help: "Files whose unread lines were read after all: rotated (found beside its old path after a \
                 rename while not followed), copy (a truncated file's lines read from logrotate's copy) or \
                 unseen (a generation rotated away before the agent read any of it, found beside the path).",
    labels: &["source", "how"],
};
pub(super) const LINES_REPLAYED: Def = Def {
    name: "tailship_lines_replayed_total",
    help: "Lines read again after a restart from batches in flight at the stop or crash: skipped \
                 (their batch was acknowledged), resent (with the timestamps they first had) or reconciled \
                 (found stored by a query, not sent).",
    labels: &["source", "outcome"],
};
pub(super) const FILES_SKIPPED: Def = Def {
    name: "tailship_files_skipped_total",
    help: "Files a source matched and does not read, by reason (ignore_older: untouched for longer than \
                 the source's ignore_older; read once written to again).",
    labels: &["source", "reason"],
};
pub(super) const FILES_LOST: Def = Def {
    name: "tailship_files_lost_total",
    help: "Files with lines written and not read that could not be found again: gone (rotated away \
                 or deleted while not followed, and not beside its old path) or truncated (no copy beside it).",
    labels: &["source", "reason"],
};

// The journal and positions.
pub(super) const JOURNAL_RESTARTS: Def = Def {
    name: "tailship_journal_restarts_total",
    help: "Times a journal source started journalctl again after it ended or could not be started.",
    labels: &["source"],
};
pub(super) const OLDEST_UNACKED_SECONDS: Def = Def {
    name: "tailship_oldest_unacknowledged_seconds",
    help: "Age of the oldest line read and not yet acknowledged, per client (0 when none).",
    labels: &["client"],
};
pub(super) const POSITIONS_WRITES: Def = Def {
    name: "tailship_positions_writes_total",
    help: "Writes of the positions file by outcome.",
    labels: &["outcome"],
};

// Alerts, per rule.
pub(super) const ALERT_MATCHES: Def =
    Def { name: "tailship_alert_matches_total", help: "Lines matching an alert rule.", labels: &["rule"] };
pub(super) const ALERTS_SENT: Def = Def {
    name: "tailship_alerts_sent_total",
    help: "Alert webhook requests acknowledged, by rule and state (alerting, ok).",
    labels: &["rule", "state"],
};
pub(super) const ALERT_DELIVERY_FAILURES: Def = Def {
    name: "tailship_alert_delivery_failures_total",
    help: "Failed alert requests (each attempt), by rule, target (webhook, annotation) and status (the HTTP status, or `error` for connection failures).",
    labels: &["rule", "target", "status"],
};
pub(super) const ALERT_UPDATES_DROPPED: Def = Def {
    name: "tailship_alert_updates_dropped_total",
    help: "Alert matches or updates given up, by reason (queue_full: the alert queue was full, the match was not counted; too_many_groups; rejected: a 4xx other than 429; retries_exhausted; shutdown: unsent at shutdown_timeout).",
    labels: &["rule", "reason"],
};
pub(super) const ALERT_GROUPS_OPEN: Def = Def {
    name: "tailship_alert_groups_open",
    help: "Alert groups sent as alerting and not yet resolved.",
    labels: &["rule"],
};
pub(super) const ALERT_ANNOTATIONS: Def = Def {
    name: "tailship_alert_annotations_total",
    help: "Annotations created on the hosted instance, by rule.",
    labels: &["rule"],
};
