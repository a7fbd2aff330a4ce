//! The writer shape: a task of its own that runs the writes an event loop
//! hands it, one job at a time and in the order sent, and tells the loop
//! what happened through reports, in the order it happened.
//!
//! ```text
//! event loop ──Job──► writer task ──Report──► event loop
//! (folds events, plans;          (sends; may wake itself on a timer)
//!  never awaits a write)
//! ```
//!
//! The loop keeps taking in watch events and answers while a write is in
//! flight, and learns of each write as it ends. The catalog controller's
//! Consul writer and its ExternalName Service writer (`-to-k8s`) run on
//! it. The mirror controller's writes are not: its unit of work is a
//! namespace, taken from the [`WorkQueue`](crate::WorkQueue) by several
//! workers at once, each sending that namespace's writes and ending with
//! `done`; the queue is already its job channel and `done` its report, and
//! its watches fold events in tasks of their own, so there is no single
//! loop that a write could hold up.
//!
//! This module must NOT know what a job means: it orders, runs and
//! reports; the [`Writer`] decides.

use std::future::Future;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::TaskGuard;

/// Where a writer sends its reports.
pub type Reports<R> = mpsc::UnboundedSender<R>;

/// What a writer task runs.
pub trait Writer: Send + 'static {
    /// A write (or other work) the event loop hands over.
    type Job: Send + 'static;
    /// What the writer tells the event loop.
    type Report: Send + 'static;

    /// Runs one job; the next starts only when it ends. Reports go to
    /// `reports` as things happen (several per job, or none).
    fn run(
        &mut self,
        job: Self::Job,
        reports: &Reports<Self::Report>,
    ) -> impl Future<Output = ()> + Send;

    /// When the writer wants [`Writer::on_timer`] called while it waits
    /// for jobs; `None`: never. Asked again after every job and timer.
    fn timer(&self) -> Option<Instant> {
        None
    }

    /// The time [`Writer::timer`] named has come, and no job is running.
    fn on_timer(&mut self) {}

    /// The event loop dropped its sender and every job sent has run: the
    /// last call before the task ends.
    fn on_finish(&mut self) {}
}

/// The event loop's end of a writer task.
pub struct WriterHandle<J, R> {
    /// Jobs, run in the order sent.
    pub jobs: mpsc::UnboundedSender<J>,
    /// Reports, in the order they happened.
    pub reports: mpsc::UnboundedReceiver<R>,
    task: tokio::task::JoinHandle<()>,
    /// Aborts the task when dropped (the controller stopped on an error).
    _guard: TaskGuard,
}

impl<J, R> WriterHandle<J, R> {
    /// Lets the writer finish the jobs it was given, then stops it. Every
    /// other sender of jobs must be gone.
    pub async fn finish(self) -> Result<(), tokio::task::JoinError> {
        let Self { jobs, task, .. } = self;
        drop(jobs);
        task.await
    }
}

/// Starts `writer` on a task of its own.
pub fn spawn<W: Writer>(writer: W) -> WriterHandle<W::Job, W::Report> {
    let (jobs, jobs_rx) = mpsc::unbounded_channel();
    let (reports_tx, reports) = mpsc::unbounded_channel();
    let task = tokio::spawn(run(writer, jobs_rx, reports_tx));
    let guard = crate::task::guard(&task);
    WriterHandle {
        jobs,
        reports,
        task,
        _guard: guard,
    }
}

async fn run<W: Writer>(
    mut writer: W,
    mut jobs: mpsc::UnboundedReceiver<W::Job>,
    reports: Reports<W::Report>,
) {
    loop {
        let timer = writer.timer();
        tokio::select! {
            job = jobs.recv() => match job {
                Some(job) => writer.run(job, &reports).await,
                None => break,
            },
            () = sleep_until_opt(timer) => writer.on_timer(),
        }
    }
    writer.on_finish();
}

/// Sleeps until `at`, or forever.
pub async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;

    /// Records what it was asked to do; a job `n` takes `n` ms and
    /// reports `n` before and after.
    #[derive(Default)]
    struct Recorder {
        log: Arc<Mutex<Vec<String>>>,
        wake_at: Option<Instant>,
    }

    impl Recorder {
        fn note(&self, s: String) {
            self.log.lock().unwrap().push(s);
        }
    }

    impl Writer for Recorder {
        type Job = u64;
        type Report = (u64, &'static str);

        async fn run(&mut self, job: u64, reports: &Reports<(u64, &'static str)>) {
            self.note(format!("start {job}"));
            let _ = reports.send((job, "started"));
            tokio::time::sleep(Duration::from_millis(job)).await;
            let _ = reports.send((job, "done"));
            self.note(format!("end {job}"));
        }

        fn timer(&self) -> Option<Instant> {
            self.wake_at
        }

        fn on_timer(&mut self) {
            self.note("timer".into());
            self.wake_at = None;
        }

        fn on_finish(&mut self) {
            self.note("finish".into());
        }
    }

    #[tokio::test(start_paused = true)]
    async fn jobs_run_one_at_a_time_in_order_and_report_in_order() {
        let writer = Recorder::default();
        let log = writer.log.clone();
        let mut handle = spawn(writer);
        for job in [30, 10, 20] {
            handle.jobs.send(job).unwrap();
        }
        let mut seen = Vec::new();
        for _ in 0..6 {
            seen.push(handle.reports.recv().await.unwrap());
        }
        assert_eq!(
            seen,
            [
                (30, "started"),
                (30, "done"),
                (10, "started"),
                (10, "done"),
                (20, "started"),
                (20, "done")
            ]
        );
        handle.finish().await.unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            [
                "start 30", "end 30", "start 10", "end 10", "start 20", "end 20", "finish"
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_timer_fires_while_idle_and_not_before_its_time() {
        let start = Instant::now();
        let writer = Recorder {
            wake_at: Some(start + Duration::from_millis(500)),
            ..Recorder::default()
        };
        let log = writer.log.clone();
        let handle = spawn(writer);
        tokio::time::sleep(Duration::from_millis(499)).await;
        assert!(log.lock().unwrap().is_empty(), "not before its time");
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!(*log.lock().unwrap(), ["timer"]);
        handle.finish().await.unwrap();
        assert_eq!(*log.lock().unwrap(), ["timer", "finish"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_timer_due_during_a_job_waits_for_the_job_to_end() {
        let start = Instant::now();
        let writer = Recorder {
            wake_at: Some(start + Duration::from_millis(5)),
            ..Recorder::default()
        };
        let log = writer.log.clone();
        let handle = spawn(writer);
        handle.jobs.send(100).unwrap();
        // The job is taken at once (no time has passed), so the timer
        // falls inside it.
        tokio::time::sleep(Duration::from_millis(200)).await;
        handle.finish().await.unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            ["start 100", "end 100", "timer", "finish"]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_handle_stops_the_writer_mid_job() {
        let writer = Recorder::default();
        let log = writer.log.clone();
        let mut handle = spawn(writer);
        handle.jobs.send(1_000).unwrap();
        assert_eq!(handle.reports.recv().await, Some((1_000, "started")));
        drop(handle);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(
            *log.lock().unwrap(),
            ["start 1000"],
            "aborted, not finished"
        );
    }
}
