//! Tasks that run beside the requests, owned so they end with the service.
//!
//! Two kinds run here. Loops (the supervisor, the reaper) never end by
//! themselves, so shutdown stops them. Clean-up ends by itself: a kill
//! nobody waits for, a size given back, a create finished after its client
//! left. Shutdown waits for it, within the grace. Nothing is left running,
//! or cut off half way, once `run` returns.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

/// The service's background tasks; cloning is cheap.
#[derive(Clone, Default)]
pub struct Background {
    /// Every task spawned here, loops and clean-up alike.
    tasks: TaskTracker,
    /// Cancelled when the service stops.
    ///
    /// Loops end at their next await.
    stop: CancellationToken,
}

impl Background {
    /// Runs `work` to its end on a task of its own; shutdown waits for it.
    pub fn spawn<T: Send + 'static>(
        &self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> tokio::task::JoinHandle<T> {
        self.tasks.spawn(work.in_current_span())
    }

    /// As [`Self::spawn`], on `runtime`.
    ///
    /// This is for code that may run outside one, such as a value dropped
    /// after the runtime went.
    pub fn spawn_on<T: Send + 'static>(
        &self,
        work: impl Future<Output = T> + Send + 'static,
        runtime: &tokio::runtime::Handle,
    ) -> tokio::task::JoinHandle<T> {
        self.tasks.spawn_on(work.in_current_span(), runtime)
    }

    /// Runs the loop `work` until the service stops.
    ///
    /// The loop is dropped at the await it is at then. Loops that must not
    /// be cut mid-step take [`Self::stopped`] and end between steps.
    pub fn spawn_loop(&self, work: impl Future<Output = ()> + Send + 'static) {
        let stop = self.stop.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = work => {}
            }
        });
    }

    /// Resolves once the service is stopping.
    pub fn stopped(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.stop.clone().cancelled_owned()
    }

    /// Stops the loops; clean-up already spawned goes on.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Waits at most `grace` for every task to end, and says whether they
    /// all did.
    ///
    /// Tasks still running then are left to the runtime's shutdown.
    pub async fn finish(&self, grace: Duration) -> bool {
        self.stop.cancel();
        self.tasks.close();
        tokio::time::timeout(grace, self.tasks.wait()).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loops_stop_and_clean_up_runs_to_its_end() {
        let background = Background::default();
        background.spawn_loop(std::future::pending());
        let (done, finished) = tokio::sync::oneshot::channel();
        background.spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let _ = done.send(());
        });
        assert!(background.finish(Duration::from_secs(20)).await);
        assert!(finished.await.is_ok(), "clean-up ran to its end");
    }

    #[tokio::test]
    async fn clean_up_that_outlasts_the_grace_is_reported() {
        let background = Background::default();
        background.spawn(std::future::pending::<()>());
        assert!(!background.finish(Duration::from_millis(50)).await);
    }
}
