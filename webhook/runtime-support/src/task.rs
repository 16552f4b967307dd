//! A task that ends with whoever holds it: a replica's watches, workers and sweeps are
//! dropped when its run ends.

use tokio::task::JoinHandle;

/// A spawned task that is aborted when dropped, so a run's tasks end with the run.
pub struct Task(JoinHandle<()>);

impl Task {
    pub fn spawn(future: impl Future<Output = ()> + Send + 'static) -> Self {
        Self(tokio::spawn(future))
    }
}

impl Task {
    /// Whether the task has ended (its future returned).
    pub fn is_finished(&self) -> bool {
        self.0.is_finished()
    }

    /// Aborts the task and returns once it has ended: an abort takes effect at the task's
    /// next await, and a task polled on another thread meanwhile may still act once.
    pub async fn stop(self) {
        self.0.abort();
        while !self.0.is_finished() {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}
