//! The store's own tests, on SQLite and, where a server answers, on
//! PostgreSQL.

use super::*;

use super::fresh_postgres::FreshPostgres;

fn row(id: &str, workspace_id: &str, status: Status, stamped: bool) -> SessionRow {
    SessionRow {
        id: id.into(),
        workspace_id: workspace_id.into(),
        status: status.as_str().into(),
        listed: true,
        title: String::new(),
        argv: "[]".into(),
        cwd: "/".into(),
        created_at: 1,
        last_attached_at: None,
        ended_at: (status != Status::Active).then_some(2),
        exit_code: None,
        exit_signal: None,
        dispose_requested_at: stamped.then_some(3),
        dispose_signal: None,
        dispose_grace_ms: None,
        dispose_deadline: None,
        host_id: String::new(),
    }
}

#[test]
fn a_disposal_is_overdue_only_after_its_grace_and_settling() {
    let second = 1_000_000;
    let mut stamped = row("s", "w", Status::Active, true);
    stamped.dispose_requested_at = Some(10 * second);
    // The default grace (1 s) and the settling (2 s).
    assert!(!stamped.is_overdue(13 * second - 1));
    assert!(stamped.is_overdue(13 * second));
    stamped.dispose_deadline = Some(40 * second);
    assert!(!stamped.is_overdue(41 * second));
    assert!(stamped.is_overdue(42 * second));
    assert!(!row("u", "w", Status::Active, false).is_overdue(i64::MAX));
}

fn workspace(id: &str, created_at: i64) -> WorkspaceRow {
    WorkspaceRow {
        id: id.into(),
        name: id.into(),
        created_at,
        closed_at: None,
    }
}

/// What keeps a test's database: its SQLite file's directory, or its
/// PostgreSQL database.
struct Kept {
    _sqlite: Option<tempfile::TempDir>,
    _postgres: Option<FreshPostgres>,
}

/// A store on an SQLite file of its own, gone with the directory.
async fn temporary_store() -> (Kept, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let database = Database::Sqlite(dir.path().join("holdfast.db"));
    let store = Store::open(&database, "host-a").await.expect("open");
    let kept = Kept {
        _sqlite: Some(dir),
        _postgres: None,
    };
    (kept, store)
}

/// A store on each backend: SQLite, and PostgreSQL where a server
/// answers.
async fn every_backend() -> Vec<(Kept, Store)> {
    let mut stores = vec![temporary_store().await];
    if let Some(fresh) = FreshPostgres::create() {
        let database = Database::parse(&fresh.url()).expect("a PostgreSQL URL");
        let store = Store::open(&database, "host-a")
            .await
            .expect("open PostgreSQL");
        let kept = Kept {
            _sqlite: None,
            _postgres: Some(fresh),
        };
        stores.push((kept, store));
    }
    stores
}

#[tokio::test]
async fn only_rows_that_may_still_change_are_unsettled() {
    for (_kept, store) in every_backend().await {
        only_unsettled_rows(store).await;
    }
}

async fn only_unsettled_rows(store: Store) {
    let workspace = store
        .create_workspace(workspace("w", 1))
        .await
        .expect("workspace");
    for (id, status, stamped) in [
        ("active", Status::Active, false),
        ("active-stamped", Status::Active, true),
        ("ended", Status::Exited, false),
        ("ended-stamped", Status::Exited, true),
        ("disposed", Status::Disposed, true),
    ] {
        store
            .insert_session(row(id, &workspace.id, status, stamped))
            .await
            .expect("insert");
    }
    // Another host's rows are never this host's to settle.
    store
        .for_host("host-b")
        .insert_session(row("elsewhere", &workspace.id, Status::Active, false))
        .await
        .expect("insert");
    let mut unsettled: Vec<String> = store
        .unsettled_sessions()
        .await
        .expect("read")
        .into_iter()
        .map(|row| row.id)
        .collect();
    unsettled.sort();
    assert_eq!(unsettled, ["active", "active-stamped", "ended-stamped"]);
}

/// How SQLite finds the rows of `query` (binding `binds`, as text).
async fn plan_of<Q>(store: &Store, query: Q, binds: &'static [&'static str]) -> String
where
    Q: diesel::query_builder::QueryFragment<diesel::sqlite::Sqlite>
        + diesel::query_builder::QueryId,
{
    #[derive(QueryableByName)]
    struct Step {
        #[diesel(sql_type = diesel::sql_types::Text)]
        detail: String,
    }
    let sql = diesel::debug_query::<diesel::sqlite::Sqlite, _>(&query).to_string();
    let sql = sql
        .split(" -- binds:")
        .next()
        .unwrap_or_default()
        .to_owned();
    store
        .run("explaining", move |conn| {
            let AnyConnection::Sqlite(conn) = conn else {
                unreachable!("plans are SQLite's")
            };
            let mut explain = diesel::sql_query(format!("EXPLAIN QUERY PLAN {sql}"))
                .into_boxed::<diesel::sqlite::Sqlite>();
            for bind in binds {
                explain = explain.bind::<diesel::sql_types::Text, _>(*bind);
            }
            explain.load::<Step>(conn)
        })
        .await
        .expect("explain")
        .into_iter()
        .map(|step| step.detail)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The reads that come back whatever the history: a list after a
/// restart, each reaper pass, a workspace's close. None may read every
/// row ever written.
#[tokio::test]
async fn reads_that_recur_go_through_their_indexes() {
    let (_dir, store) = temporary_store().await;
    let id = terminal_sessions::id;
    let searched = "SEARCH terminal_sessions USING INDEX terminal_sessions_unsettled \
                    (status=? AND workspace_id=?)";
    let plan = plan_of(&store, listable("w", "h").select(id), &["w", "active", "h"]).await;
    assert_eq!(
        plan,
        "SEARCH terminal_sessions USING INDEX terminal_sessions_unsettled \
         (status=? AND workspace_id=? AND host_id=?)"
    );
    let plan = plan_of(&store, unstamped_in("w").select(id), &["w", "active"]).await;
    assert_eq!(plan, searched);
    let plan = plan_of(
        &store,
        unsettled("h").select(id),
        &["active", "exited", "h"],
    )
    .await;
    assert_eq!(
        plan,
        "SCAN terminal_sessions USING INDEX terminal_sessions_unsettled"
    );
    let plan = plan_of(
        &store,
        oldest_first!(diesel::sqlite::Sqlite, None, true),
        &[],
    )
    .await;
    assert_eq!(plan, "SCAN workspaces USING INDEX workspaces_open_by_age");
    let after = Some((1, "a".to_owned()));
    let plan = plan_of(
        &store,
        oldest_first!(diesel::sqlite::Sqlite, after.clone(), true),
        &["1", "1", "a"],
    )
    .await;
    assert_eq!(
        plan,
        "SEARCH workspaces USING INDEX workspaces_open_by_age (created_at>?)"
    );
    let plan = plan_of(
        &store,
        oldest_first!(diesel::sqlite::Sqlite, after, false),
        &["1", "1", "a"],
    )
    .await;
    assert_eq!(
        plan,
        "SEARCH workspaces USING INDEX workspaces_by_age (created_at>?)"
    );
}

/// Creation times follow the order of creation whatever the clock
/// says.
///
/// Pages go on from the last workspace given. None is skipped or
/// repeated, and one created after a page comes on a later one.
#[tokio::test]
async fn workspaces_are_paged_in_the_order_they_were_made() {
    for (_kept, store) in every_backend().await {
        pages_in_creation_order(store).await;
    }
}

async fn pages_in_creation_order(store: Store) {
    let create = |id: &str, created_at: i64| {
        let row = workspace(id, created_at);
        let store = store.clone();
        async move { store.create_workspace(row).await.expect("create") }
    };
    // The same microsecond twice, then a clock set back: ids that sort
    // against the order of creation.
    assert_eq!(create("c", 100).await.created_at, 100);
    assert_eq!(create("b", 100).await.created_at, 101);
    assert_eq!(create("a", 50).await.created_at, 102);
    let page = |after: Option<(i64, String)>| {
        let store = store.clone();
        async move {
            let rows = store
                .list_workspaces(after, Some(2), false)
                .await
                .expect("page");
            rows.into_iter()
                .map(|row| (row.created_at, row.id))
                .collect::<Vec<_>>()
        }
    };
    let first = page(None).await;
    assert_eq!(first, [(100, "c".into()), (101, "b".into())]);
    // Made after the first page, its clock earlier than every other.
    create("0", 1).await;
    let second = page(first.last().cloned()).await;
    assert_eq!(second, [(102, "a".into()), (103, "0".into())]);
    assert_eq!(page(second.last().cloned()).await, []);
}
