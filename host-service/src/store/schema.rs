//! The database schema, as diesel sees it (mirrors `migrations/`).

diesel::table! {
    /// Workspaces group sessions.
    workspaces (id) {
        id -> Text,
        name -> Text,
        created_at -> BigInt,
        closed_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    /// One row per session ever created.
    terminal_sessions (id) {
        id -> Text,
        workspace_id -> Text,
        status -> Text,
        listed -> Bool,
        title -> Text,
        argv -> Text,
        cwd -> Text,
        created_at -> BigInt,
        last_attached_at -> Nullable<BigInt>,
        ended_at -> Nullable<BigInt>,
        exit_code -> Nullable<Integer>,
        exit_signal -> Nullable<Integer>,
        dispose_requested_at -> Nullable<BigInt>,
        dispose_signal -> Nullable<Integer>,
        dispose_grace_ms -> Nullable<Integer>,
        dispose_deadline -> Nullable<BigInt>,
        host_id -> Text,
    }
}

diesel::table! {
    /// The host-services sharing the database.
    hosts (id) {
        id -> Text,
        name -> Text,
        address -> Text,
        started_at -> BigInt,
        heartbeat_at -> BigInt,
    }
}

diesel::joinable!(terminal_sessions -> workspaces (workspace_id));
diesel::allow_tables_to_appear_in_same_query!(workspaces, terminal_sessions, hosts);
