//! Taking in an answer's body: whole (most calls), or parsed while it
//! arrives (whole-node reads, which list every instance on the node).
//!
//! A body read whole is held twice for a moment (the received chunks, then
//! the one buffer they are copied into) and once more while it is parsed:
//! at 50,000 instances a node-services answer is about 21 MB. A
//! [`BodyParser`] instead runs on a blocking thread that reads the chunks
//! as they come off the connection, each dropped once parsed, so the
//! answer never exists whole in memory.
//!
//! This module must NOT interpret bodies: the parser is the caller's.

use std::io;

use bytes::Buf;

use super::*;

/// How many received chunks may wait for the parser before the reading
/// side waits too. Each is at most a read buffer (a few KB to about 400 KB
/// on a fast connection), and the parser is slower than the connection, so
/// more room only holds more of the answer in memory: with 8, the two
/// whole-node reads of 50,000 instances held about 9 MB of chunks at the
/// controller's memory peak, without reading the answer sooner.
const CHUNKS_IN_FLIGHT: usize = 1;

/// The parser's own read buffer: large enough that reading byte by byte,
/// as a JSON parser does, rarely goes back to the chunk channel.
const PARSE_BUFFER: usize = 64 * 1024;

/// A caller's parser of a streamed body: reads it to its end and returns
/// the value, or a message saying why the body is not what it expected.
pub type BodyParser<T> = Arc<dyn Fn(&mut dyn io::Read) -> Result<T, String> + Send + Sync>;

/// Why a body could not be taken in.
pub(super) enum BodyError {
    /// The connection failed (or timed out) while the body was read.
    Transport(reqwest::Error),
    /// The body is not what the reader expected.
    Decode(String),
}

/// How a successful answer's body is taken in.
pub(super) trait BodyReader: Sync {
    /// What it becomes.
    type Out: Send;

    /// Reads the body of `resp`.
    fn read(
        &self,
        resp: reqwest::Response,
    ) -> impl Future<Output = Result<Self::Out, BodyError>> + Send;
}

/// The body as one buffer.
pub(super) struct Whole;

impl BodyReader for Whole {
    type Out = Bytes;

    async fn read(&self, resp: reqwest::Response) -> Result<Bytes, BodyError> {
        resp.bytes().await.map_err(BodyError::Transport)
    }
}

/// The body parsed as it arrives (see the module docs).
pub(super) struct Streamed<T>(pub(super) BodyParser<T>);

impl<T: Send + 'static> BodyReader for Streamed<T> {
    type Out = T;

    async fn read(&self, mut resp: reqwest::Response) -> Result<T, BodyError> {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(CHUNKS_IN_FLIGHT);
        let parse = Arc::clone(&self.0);
        let parser = tokio::task::spawn_blocking(move || {
            let mut reader = io::BufReader::with_capacity(
                PARSE_BUFFER,
                ChunkReader {
                    rx,
                    current: Bytes::new(),
                },
            );
            parse(&mut reader)
        });
        let mut failed = None;
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    // A parser that stopped early (the body is not what it
                    // expects) says why in its result; the rest of the body
                    // is not read, and the connection is not reused.
                    if tx.send(chunk).await.is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        // The end of the channel is the end of the body for the parser.
        drop(tx);
        let parsed = parser.await;
        if let Some(e) = failed {
            return Err(BodyError::Transport(e));
        }
        match parsed {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(message)) => Err(BodyError::Decode(message)),
            Err(join) => Err(BodyError::Decode(format!("the parser failed: {join}"))),
        }
    }
}

/// The received chunks as one byte stream, for a parser on a blocking
/// thread.
struct ChunkReader {
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    current: Bytes,
}

impl io::Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(chunk) => self.current = chunk,
                // The sender is gone: the body ended (or its reading
                // failed, which the reading side reports).
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current.advance(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Read;

    use super::*;

    #[test]
    fn a_chunk_reader_joins_the_chunks_and_ends_with_the_channel() {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        for part in ["{\"a\":", "", "[1,2", ",3]}"] {
            tx.try_send(Bytes::from(part)).unwrap();
        }
        drop(tx);
        let mut text = String::new();
        ChunkReader {
            rx,
            current: Bytes::new(),
        }
        .read_to_string(&mut text)
        .unwrap();
        assert_eq!(text, "{\"a\":[1,2,3]}");
    }
}
