//! The host-services sharing the database: their rows in `hosts`.

use diesel::prelude::*;

use crate::store::schema::hosts;
use crate::store::{Result, Store};

/// A host-service sharing the database.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = hosts)]
pub struct HostRow {
    /// Its stable id (`--host-id`, or made at its first start).
    pub id: String,
    /// The name people know it by (the machine's, by default).
    pub name: String,
    /// Where clients and other hosts reach its gRPC port.
    pub address: String,
    /// When it last started, µs since the epoch.
    pub started_at: i64,
    /// When it last said it was alive, µs since the epoch.
    pub heartbeat_at: i64,
}

impl Store {
    /// Records that `row`'s host-service started, or says it is alive.
    pub async fn register_host(&self, row: HostRow) -> Result<()> {
        self.run("registering this host", move |conn| {
            conn.write_transaction(|conn| {
                let updated = diesel::update(hosts::table.find(&row.id))
                    .set(&row)
                    .execute(conn)?;
                if updated == 0 {
                    diesel::insert_into(hosts::table)
                        .values(&row)
                        .execute(conn)?;
                }
                Ok(())
            })
        })
        .await
    }

    /// Refreshes this host's heartbeat to `now`.
    pub async fn heartbeat(&self, now: i64) -> Result<()> {
        let host = self.host.to_string();
        self.run("refreshing this host's heartbeat", move |conn| {
            diesel::update(hosts::table.find(host))
                .set(hosts::heartbeat_at.eq(now))
                .execute(conn)
                .map(drop)
        })
        .await
    }

    /// The host-service `id`, if it ever registered.
    pub async fn host(&self, id: &str) -> Result<Option<HostRow>> {
        let id = id.to_owned();
        self.run("reading a host", move |conn| {
            hosts::table
                .find(id)
                .select(HostRow::as_select())
                .first(conn)
                .optional()
        })
        .await
    }

    /// Every host-service that shares the database, by name.
    pub async fn hosts(&self) -> Result<Vec<HostRow>> {
        self.run("reading the hosts", |conn| {
            hosts::table
                .order((hosts::name, hosts::id))
                .select(HostRow::as_select())
                .load(conn)
        })
        .await
    }
}
