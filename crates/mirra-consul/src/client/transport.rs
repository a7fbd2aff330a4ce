//! The plumbing under every call: building URLs with the query parameters,
//! sending with the token, retrying and failing over between servers, and
//! turning answers into values or errors.
//!
//! This module must NOT know what an endpoint means: `api` and `login` do.

use super::*;

/// One request, ready to send (and resend).
pub(super) struct Call<'a> {
    pub(super) operation: &'static str,
    pub(super) method: Method,
    pub(super) url: Url,
    pub(super) body: Option<Bytes>,
    pub(super) timeout: Duration,
    pub(super) idempotent: bool,
    pub(super) txn_ops: Option<&'a [TxnOp]>,
}

/// A successful answer.
pub(super) struct Answer {
    pub(super) index: u64,
    pub(super) body: Bytes,
}

impl Client {
    // ----- plumbing -----------------------------------------------------------

    pub(super) async fn read<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        segments: &[&str],
        q: &QueryOptions,
    ) -> Result<Versioned<T>, Error> {
        let raw = self.read_raw(operation, segments, q).await?;
        let value = decode(operation, &raw.value)?;
        Ok(Versioned {
            index: raw.index,
            value,
        })
    }

    pub(super) async fn read_raw(
        &self,
        operation: &'static str,
        segments: &[&str],
        q: &QueryOptions,
    ) -> Result<Versioned<Bytes>, Error> {
        let answer = self.execute(self.get_call(operation, segments, q)?).await?;
        Ok(Versioned {
            index: answer.index,
            value: answer.body,
        })
    }

    /// A GET whose successful body `parse` reads as it arrives (see
    /// [`BodyParser`]); error bodies are read whole, as for any call.
    pub(super) async fn read_parsed<T: Send + 'static>(
        &self,
        operation: &'static str,
        segments: &[&str],
        q: &QueryOptions,
        parse: &BodyParser<T>,
    ) -> Result<Versioned<T>, Error> {
        let (index, value) = self
            .execute_reading(
                self.get_call(operation, segments, q)?,
                &Streamed(Arc::clone(parse)),
            )
            .await?;
        Ok(Versioned { index, value })
    }

    fn get_call(
        &self,
        operation: &'static str,
        segments: &[&str],
        q: &QueryOptions,
    ) -> Result<Call<'static>, Error> {
        let timeout = match q.effective_wait() {
            Some(wait) => blocking_timeout(wait, self.inner.request_timeout),
            None => self.inner.request_timeout,
        };
        Ok(Call {
            operation,
            method: Method::GET,
            url: self.url(operation, segments, Some(q))?,
            body: None,
            timeout,
            idempotent: true,
            txn_ops: None,
        })
    }

    pub(super) async fn write<B: serde::Serialize + ?Sized>(
        &self,
        operation: &'static str,
        segments: &[&str],
        body: &B,
        idempotent: bool,
        txn_ops: Option<&[TxnOp]>,
    ) -> Result<Answer, Error> {
        let body = serde_json::to_vec(body).map_err(|e| Error::Encode {
            operation,
            message: e.to_string(),
        })?;
        let call = Call {
            operation,
            method: Method::PUT,
            url: self.url(operation, segments, None)?,
            body: Some(Bytes::from(body)),
            timeout: self.inner.request_timeout,
            idempotent,
            txn_ops,
        };
        self.execute(call).await
    }

    pub(super) fn url(
        &self,
        operation: &'static str,
        segments: &[&str],
        q: Option<&QueryOptions>,
    ) -> Result<Url, Error> {
        self.url_with(&self.inner.common, operation, segments, q)
    }

    pub(super) fn url_with(
        &self,
        params: &CommonParams,
        operation: &'static str,
        segments: &[&str],
        q: Option<&QueryOptions>,
    ) -> Result<Url, Error> {
        build_url(&self.inner.servers[0].base, segments, params, q).map_err(|e| Error::Encode {
            operation,
            message: e.to_string(),
        })
    }

    /// Sends `call` with the client's token. With a login configured, a
    /// `403 ACL not found` (the login token was deleted, expired or logged
    /// out) causes one new login and one resend; a second failure is
    /// returned. Resending is safe for any request: Consul refused it
    /// before applying anything.
    pub(super) async fn execute(&self, call: Call<'_>) -> Result<Answer, Error> {
        let (index, body) = self.execute_reading(call, &Whole).await?;
        Ok(Answer { index, body })
    }

    /// [`Client::execute`] with the body taken in by `reader`.
    pub(super) async fn execute_reading<B: BodyReader>(
        &self,
        call: Call<'_>,
        reader: &B,
    ) -> Result<(u64, B::Out), Error> {
        let creds = self.credentials().await?;
        match (
            self.execute_with_reading(&call, &creds, reader).await,
            &self.inner.login,
        ) {
            (Err(e), Some(login)) if e.is_acl_not_found() => {
                warn!(
                    operation = call.operation,
                    auth_method = %login.config.auth_method,
                    token = %creds.hint,
                    "Consul does not know the login token any more; logging in again"
                );
                let fresh = self.log_in(login, Some(creds.generation)).await?;
                self.execute_with_reading(&call, &fresh, reader).await
            }
            (result, _) => result,
        }
    }

    /// Sends `call` with `creds`, retrying per the rules in the module
    /// docs.
    pub(super) async fn execute_with(
        &self,
        call: &Call<'_>,
        creds: &Credentials,
    ) -> Result<Answer, Error> {
        let (index, body) = self.execute_with_reading(call, creds, &Whole).await?;
        Ok(Answer { index, body })
    }

    /// [`Client::execute_with`] with the body taken in by `reader`.
    pub(super) async fn execute_with_reading<B: BodyReader>(
        &self,
        call: &Call<'_>,
        creds: &Credentials,
        reader: &B,
    ) -> Result<(u64, B::Out), Error> {
        let max_attempts = self.inner.retry.max_attempts.max(1);
        let servers = self.inner.servers.len();
        let mut attempt = 0u32;
        let mut switches = 0usize;
        loop {
            let server = self.current_index();
            let err = match self.attempt(call, server, creds, reader).await {
                Ok(answer) => return Ok(answer),
                Err(e) => e,
            };
            let may_retry = err.is_retryable() && (call.idempotent || err.certainly_not_applied());
            if servers > 1 && server_unreachable(&err) {
                let next = (server + 1) % servers;
                // Only the first request to see this server fail moves the
                // cursor; concurrent ones that failed on it too must not
                // skip the server it moved to.
                if self
                    .inner
                    .current
                    .compare_exchange(server, next, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                {
                    warn!(
                        operation = call.operation,
                        class = err.class(),
                        from = %self.inner.servers[server].base,
                        to = %self.inner.servers[next].base,
                        "consul server did not answer, switching to the next one"
                    );
                }
                // Each other server gets one immediate try before the
                // retry policy's backoff applies.
                if may_retry && switches + 1 < servers {
                    switches += 1;
                    continue;
                }
            }
            attempt += 1;
            if !may_retry || attempt >= max_attempts {
                debug!(
                    operation = call.operation,
                    class = err.class(),
                    attempt,
                    "consul request failed"
                );
                return Err(err);
            }
            let delay = self.inner.retry.jittered_delay(attempt);
            warn!(
                operation = call.operation,
                class = err.class(),
                attempt,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error = %err,
                "consul request failed, retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    pub(super) async fn attempt<B: BodyReader>(
        &self,
        call: &Call<'_>,
        server: usize,
        creds: &Credentials,
        reader: &B,
    ) -> Result<(u64, B::Out), Error> {
        let target = &self.inner.servers[server];
        let secret = creds.secret.as_ref().map(Token::expose);
        let transport =
            |e: reqwest::Error| error_from_transport(call.operation, call.timeout, &e, secret);

        let mut url = call.url.clone();
        if server != 0 {
            rebase(&mut url, &target.base);
        }
        let mut req = target
            .http
            .request(call.method.clone(), url)
            .timeout(call.timeout);
        if let Some(h) = &creds.header {
            req = req.header(TOKEN_HEADER, h.clone());
        }
        if let Some(body) = &call.body {
            req = req
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .body(body.clone());
        }
        let resp = req.send().await.map_err(transport)?;
        let status = resp.status();
        let index = resp
            .headers()
            .get(INDEX_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        debug!(
            operation = call.operation,
            status = status.as_u16(),
            index,
            bytes = resp.content_length(),
            "consul answered"
        );
        if status.is_success() {
            let body = reader.read(resp).await.map_err(|e| match e {
                BodyError::Transport(e) => transport(e),
                BodyError::Decode(message) => Error::Decode {
                    operation: call.operation,
                    message,
                },
            })?;
            return Ok((index, body));
        }
        let body = resp.bytes().await.map_err(transport)?;
        let ctx = ErrorContext {
            operation: call.operation,
            token_hint: &creds.hint,
            secret,
            txn_ops: call.txn_ops,
        };
        Err(error_from_response(&ctx, status, &body))
    }
}

pub(super) fn decode<T: DeserializeOwned>(
    operation: &'static str,
    body: &[u8],
) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| Error::Decode {
        operation,
        message: e.to_string(),
    })
}

/// Whether `err` says the server itself is gone or stuck (so another server
/// may answer), as opposed to an answer from Consul.
pub(super) fn server_unreachable(err: &Error) -> bool {
    matches!(
        err,
        Error::Connect { .. } | Error::Timeout { .. } | Error::Transport { .. }
    )
}

/// Points `url` (built on the first server's base) at another server. All
/// servers from `CONSUL_ADDRESSES` share scheme and path; only host and
/// port differ.
pub(super) fn rebase(url: &mut Url, base: &Url) {
    // Both come from parsed http(s) URLs with a host, which always accept
    // a host and a port, so neither call can fail here.
    let _ = url.set_host(base.host_str());
    let _ = url.set_port(base.port());
}
