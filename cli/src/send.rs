//! `holdfast send`: input of any size, delivered whole and in order.
//!
//! One `WriteInput` carries at most 1 MiB, and the daemon holds at most
//! 1 MiB a session has not read. So input is sent in pieces, and a piece
//! refused because the program has not read what came before
//! (`RESOURCE_EXHAUSTED`: none of it was taken) is sent again once it
//! has, for as long as the program keeps reading.

use std::time::{Duration, Instant};

use holdfast_api::proto::host::v1 as pb;

use crate::clients::{Clients, refused};

/// Bytes a piece carries: a quarter of what the daemon holds, so a piece
/// fits while the program reads the one before.
const PIECE: usize = 256 * 1024;

/// How long a program may take no input at all before `send` gives up.
const PATIENCE: Duration = Duration::from_secs(30);

/// Sends `data` to `session_id`'s input, whole and in order.
pub async fn send(clients: &mut Clients, session_id: &str, data: &[u8]) -> anyhow::Result<()> {
    let mut pause = Duration::from_millis(5);
    let mut taken_at = Instant::now();
    let mut sent = 0;
    for piece in data.chunks(PIECE) {
        loop {
            let write = pb::WriteInputRequest {
                session_id: session_id.to_owned(),
                data: prost::bytes::Bytes::copy_from_slice(piece),
                ..Default::default()
            };
            match clients.terminals.write_input(write).await {
                Ok(_) => break,
                Err(status)
                    if status.code() == tonic::Code::ResourceExhausted
                        && taken_at.elapsed() < PATIENCE =>
                {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                Err(status) => {
                    return Err(refused(status).context(format!(
                        "{sent} of {} bytes were sent to session {session_id}",
                        data.len()
                    )));
                }
            }
        }
        sent += piece.len();
        taken_at = Instant::now();
        pause = Duration::from_millis(5);
    }
    Ok(())
}
