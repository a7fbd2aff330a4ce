//! The writer as its own task: the jobs the event loop hands it, and the
//! reports it sends back.
//!
//! The event loop never awaits a write. It sends a [`Job`] and goes on
//! taking in watch events and Consul answers; the writer sends each commit
//! back as it happens ([`Report::Committed`]) and ends every write with
//! [`Report::Written`], so the index learns of a write in the order Consul
//! applied it. Jobs run one at a time, in the order sent (the task is
//! `mirra_runtime::writer`'s): a Service's Events follow its write, and a
//! re-read follows the write it belongs to.
//!
//! This module must NOT decide what to write or when (the event loop
//! does): it runs the jobs it is given.

use std::collections::BTreeSet;
use std::sync::Arc;

use mirra_catalog::ServiceInput;
use mirra_catalog::Warning;
use tokio::time::Instant;

use super::{NamespaceFailure, RereadRequest, TxnWriter, WriteOutcome};
use crate::round::Planned;

/// Where the writer sends its reports.
pub type Reports = mirra_runtime::writer::Reports<Report>;

/// A write handed to the writer.
#[derive(Debug, Default)]
pub struct WriteJob {
    /// The operations, in write order.
    pub planned: Vec<Planned>,
    /// Whether our node exists (else its creation is sent first).
    pub node_exists: bool,
    /// Write only the entries that fill whole transactions and give the
    /// rest back ([`WriteDone::rest`]): a verification pass writes its
    /// operations as it plans them, packed as one write of all of them
    /// would be.
    pub whole_transactions_only: bool,
    /// Registrations held back as too large that nothing wants any more.
    pub forget: Vec<String>,
}

/// What the event loop asks the writer to do.
#[derive(Debug)]
pub enum Job {
    /// Write planned operations; answered by [`Report::Written`].
    Write(WriteJob),
    /// Read again instances a failed `cas` refused; answered by
    /// [`Report::Reread`].
    Reread(RereadRequest),
    /// Warning Events for Services whose warnings changed (best effort).
    Events(Vec<(ServiceInput, Vec<Warning>)>),
    /// Warning Events for Services another writer keeps changing.
    Contested(Vec<ServiceInput>),
    /// Warning Events for Services whose Consul namespace could not be
    /// created.
    NamespaceFailed {
        /// The Services waiting for it.
        services: Vec<ServiceInput>,
        /// The namespace.
        namespace: String,
        /// Why it could not be created.
        error: String,
    },
    /// Forget registrations held back as too large that nothing wants any
    /// more.
    Forget(Vec<String>),
    /// A verification pass starts (see [`TxnWriter::start_pass`]).
    StartPass,
    /// A verification pass ended; `forget` as in [`WriteJob::forget`].
    EndPass {
        /// Held-back registrations nothing claims any more.
        forget: Vec<String>,
    },
}

/// What the writer tells the event loop, in the order it happened.
#[derive(Debug)]
pub enum Report {
    /// A transaction committed.
    Committed {
        /// The write's operations.
        planned: Arc<Vec<Planned>>,
        /// The plan entries it committed, in order, each once.
        entries: Vec<usize>,
        /// Whether it created our node.
        node_created: bool,
        /// Consul's results.
        results: Vec<mirra_consul::TxnResult>,
        /// When it committed.
        at: Instant,
    },
    /// Consul refused to create our node "only if absent": it exists.
    NodeExists,
    /// A [`Job::Write`] ended.
    Written(WriteDone),
    /// A [`Job::Reread`] ended: what Consul holds now, or `None` when the
    /// read failed.
    Reread {
        /// The instances read.
        ids: BTreeSet<String>,
        /// The `get` results.
        results: Option<Vec<mirra_consul::TxnResult>>,
        /// When they were read.
        at: Instant,
    },
}

/// Whether a write reached Consul.
#[derive(Debug, Default)]
pub enum Sent {
    /// Nothing was sent.
    #[default]
    Nothing,
    /// Consul answered every transaction (committed or refused content).
    Answered,
    /// Consul was unavailable (or refused us): the write stopped there.
    Unavailable(mirra_consul::Error),
}

/// What a [`Job::Write`] came to.
#[derive(Debug, Default)]
pub struct WriteDone {
    /// The operations this write covered (the job's, less `rest`).
    pub planned: Arc<Vec<Planned>>,
    /// The operations given back unwritten
    /// ([`WriteJob::whole_transactions_only`]).
    pub rest: Vec<Planned>,
    /// Which Services did not fully commit.
    pub outcome: WriteOutcome,
    /// Entries of `planned` a failed `cas` refused: to be read again.
    pub stale: BTreeSet<usize>,
    /// Whether Consul answered.
    pub sent: Sent,
    /// Namespaces that could not be created, with the Services to tell.
    pub namespace_failures: Vec<NamespaceFailure>,
    /// Service IDs of the registrations held back as too large.
    pub held_back: Vec<String>,
}

/// The event loop's end of the writer task.
pub type WriterHandle = mirra_runtime::writer::WriterHandle<Job, Report>;

/// Starts `writer` on its own task.
pub fn spawn(writer: TxnWriter) -> WriterHandle {
    mirra_runtime::writer::spawn(writer)
}

/// Jobs run in order; while no job runs, the paused whole-node reads
/// resume when no write came for a while, and when the event loop stops.
impl mirra_runtime::writer::Writer for TxnWriter {
    type Job = Job;
    type Report = Report;

    fn run(&mut self, job: Job, reports: &Reports) -> impl std::future::Future<Output = ()> + Send {
        self.run_job(job, reports)
    }

    fn timer(&self) -> Option<Instant> {
        self.resume_reads_at
    }

    fn on_timer(&mut self) {
        self.resume_reads();
    }

    fn on_finish(&mut self) {
        self.resume_reads();
    }
}

impl TxnWriter {
    async fn run_job(&mut self, job: Job, reports: &Reports) {
        if self.preview.is_some() {
            return self.run_job_dry(job, reports).await;
        }
        match job {
            Job::Write(job) => {
                self.forget_too_large(job.forget);
                let mut planned = job.planned;
                let rest = if job.whole_transactions_only {
                    let n = self.full_prefix(job.node_exists, &planned);
                    planned.split_off(n)
                } else {
                    Vec::new()
                };
                let planned = Arc::new(planned);
                let mut done = self.write(&planned, job.node_exists, reports).await;
                done.planned = planned;
                done.rest = rest;
                done.held_back = self.held_back_ids();
                // The loop is gone only when the controller stops.
                let _ = reports.send(Report::Written(done));
            }
            Job::Reread(request) => self.reread(request, reports).await,
            Job::Events(events) => {
                if !events.is_empty() {
                    self.events.send(events).await;
                }
            }
            Job::Contested(services) => {
                if !services.is_empty() {
                    self.events.send_contested(services).await;
                }
            }
            Job::NamespaceFailed {
                services,
                namespace,
                error,
            } => {
                self.events
                    .send_namespace_failed(services, &namespace, &error)
                    .await;
            }
            Job::Forget(ids) => self.forget_too_large(ids),
            Job::StartPass => self.start_pass(),
            Job::EndPass { forget } => self.end_pass(forget),
        }
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::panic)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::metrics::CatalogMetrics;
    use crate::writer::PAUSE_LINGER;

    /// A writer whose servers are never reached: the jobs below send
    /// nothing.
    fn writer() -> TxnWriter {
        let settings = crate::flags::default_settings();
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a valid URL"));
        let kube = kube::Client::try_from(config).expect("a kube client");
        let consul = mirra_consul::Client::new(
            mirra_consul::ConsulConfig::new("http://127.0.0.1:9").expect("a valid address"),
        )
        .expect("a Consul client");
        TxnWriter::new(kube, consul, &settings, CatalogMetrics::default())
    }

    /// The whole-node reads stay paused for a whole verification pass and
    /// resume `PAUSE_LINGER` after it ends, not before.
    #[tokio::test(start_paused = true)]
    async fn reads_resume_a_linger_after_the_pass_ends() {
        let writer = writer();
        let writing = writer.writing();
        let handle = spawn(writer);
        handle.jobs.send(Job::StartPass).expect("the task runs");
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(*writing.borrow(), "paused for the whole pass");
        handle
            .jobs
            .send(Job::EndPass { forget: Vec::new() })
            .expect("the task runs");
        tokio::time::sleep(PAUSE_LINGER - Duration::from_millis(1)).await;
        assert!(*writing.borrow(), "still paused within the linger");
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert!(!*writing.borrow(), "resumed after the linger");
        handle.finish().await.expect("the task ends cleanly");
    }

    /// A write with nothing to send is answered at once, sends nothing and
    /// does not pause the reads; jobs are answered in the order sent.
    #[tokio::test(start_paused = true)]
    async fn an_empty_write_is_answered_without_pausing_reads() {
        let writer = writer();
        let writing = writer.writing();
        let mut handle = spawn(writer);
        for _ in 0..2 {
            handle
                .jobs
                .send(Job::Write(WriteJob::default()))
                .expect("the task runs");
        }
        for _ in 0..2 {
            match handle.reports.recv().await {
                Some(Report::Written(done)) => {
                    assert!(matches!(done.sent, Sent::Nothing));
                    assert!(done.planned.is_empty() && done.rest.is_empty());
                    assert!(done.outcome.failed.is_empty());
                }
                other => panic!("expected Written, got {other:?}"),
            }
        }
        assert!(!*writing.borrow());
        handle.finish().await.expect("the task ends cleanly");
    }
}
