//! The `holdfast.daemon.v1.PtyDaemon` server trait.
//!
//! `build.rs` generates it over the `holdfast-api` crate's message types.
//! Its `ListResponse` is the daemon's own
//! [`ListResponse`](crate::listing::ListResponse).

#![allow(missing_docs, clippy::all)]

tonic::include_proto!("holdfast.daemon.v1");
