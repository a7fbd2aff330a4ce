//! The Consul HTTP API calls the controllers use: Enterprise namespaces,
//! catalog registration and deregistration, transactions, catalog and health
//! reads.
//!
//! This module must NOT retry, fail over or attach the token itself: every call
//! goes through the plumbing in `transport`.

use super::*;

impl Client {
    // ----- Enterprise namespaces ------------------------------------------------

    /// `PUT /v1/namespace`: creates a Consul Enterprise namespace (for
    /// example with [`Namespace::with_policy_defaults`]) in the client's
    /// partition. Needs `operator:write`, and `acl:write` on linked
    /// policies. Not resent after a timeout: the first attempt may have
    /// created it, and the second would then be refused.
    pub async fn create_namespace(&self, ns: &Namespace) -> Result<Namespace, Error> {
        let params = self.partition_only();
        let body = serde_json::to_vec(ns).map_err(|e| Error::Encode {
            operation: "namespace.create",
            message: e.to_string(),
        })?;
        let call = Call {
            operation: "namespace.create",
            method: Method::PUT,
            url: self.url_with(&params, "namespace.create", &["namespace"], None)?,
            body: Some(Bytes::from(body)),
            timeout: self.inner.request_timeout,
            idempotent: false,
            txn_ops: None,
        };
        let answer = self.execute(call).await?;
        decode("namespace.create", &answer.body)
    }

    /// `GET /v1/namespace/:name` in the client's partition; `None` when it
    /// does not exist (Consul answers 404).
    pub async fn namespace(&self, name: &str) -> Result<Option<Namespace>, Error> {
        let params = self.partition_only();
        let call = Call {
            operation: "namespace.read",
            method: Method::GET,
            url: self.url_with(&params, "namespace.read", &["namespace", name], None)?,
            body: None,
            timeout: self.inner.request_timeout,
            idempotent: true,
            txn_ops: None,
        };
        match self.execute(call).await {
            Ok(answer) => decode::<Option<Namespace>>("namespace.read", &answer.body),
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Namespaces live in a partition, not in a namespace or (as far as
    /// the address goes) a datacenter.
    pub(super) fn partition_only(&self) -> CommonParams {
        CommonParams {
            datacenter: None,
            namespace: None,
            partition: self.inner.common.partition.clone(),
        }
    }

    // ----- catalog writes -------------------------------------------------

    /// `PUT /v1/catalog/register`: registers a node and optionally one
    /// service instance and checks. One Raft apply. Retried on transient
    /// errors (it is idempotent).
    pub async fn register(&self, req: &RegisterRequest) -> Result<(), Error> {
        self.write(
            "catalog.register",
            &["catalog", "register"],
            req,
            true,
            None,
        )
        .await
        .map(|_| ())
    }

    /// `PUT /v1/catalog/deregister`: removes a node, a service instance or a
    /// check. One Raft apply. Retried on transient errors (idempotent:
    /// removing what is gone succeeds).
    pub async fn deregister(&self, req: &DeregisterRequest) -> Result<(), Error> {
        self.write(
            "catalog.deregister",
            &["catalog", "deregister"],
            req,
            true,
            None,
        )
        .await
        .map(|_| ())
    }

    // ----- transactions -----------------------------------------------------

    /// `PUT /v1/txn`: applies `ops` atomically in one Raft apply. Operations
    /// that name no namespace or partition get the client's in their body
    /// (Consul reads them only there on this endpoint). A rollback
    /// (409) is [`Error::TxnRolledBack`] naming the failed operations by
    /// their index in `ops`. The caller keeps `ops` within the server's
    /// limit (see [`Client::apply_ops`] for automatic splitting); an empty
    /// list sends nothing.
    pub async fn txn(&self, ops: &[TxnOp]) -> Result<Vec<TxnResult>, Error> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let common = &self.inner.common;
        let filled = with_tenancy(
            ops,
            common.namespace.as_deref(),
            common.partition.as_deref(),
        );
        let wire = filled.as_deref().unwrap_or(ops);
        // Errors name the caller's operations: same order, same indexes.
        let answer = self
            .write("txn", &["txn"], &wire, all_idempotent(ops), Some(ops))
            .await?;
        let resp: TxnResponse = decode("txn", &answer.body)?;
        Ok(resp.results)
    }

    /// Applies any number of operations as consecutive transactions of at
    /// most [`Client::txn_max_ops`] each, in order. A 413 that names a lower
    /// operation limit (a server before Consul 1.14 accepts 64) applied
    /// nothing: the same operations go again in transactions of that size,
    /// and the client keeps the limit. Stops at the first other failing
    /// transaction; the error tells what committed and returns every
    /// operation that did not, with failed ones indexed into `ops`.
    pub async fn apply_ops(&self, ops: Vec<TxnOp>) -> Result<TxnSummary, TxnBatchError> {
        let total = ops.len();
        let mut rest: std::collections::VecDeque<TxnOp> = ops.into();
        let mut summary = TxnSummary::default();
        while !rest.is_empty() {
            let take = self.txn_max_ops().max(1).min(rest.len());
            let chunk: Vec<TxnOp> = rest.drain(..take).collect();
            match self.txn(&chunk).await {
                Ok(_) => {
                    summary.transactions += 1;
                    summary.ops += chunk.len();
                }
                Err(e) => {
                    if let Some(limit) = e.txn_ops_limit_below(chunk.len()) {
                        self.learn_txn_limit(limit);
                        for op in chunk.into_iter().rev() {
                            rest.push_front(op);
                        }
                        continue;
                    }
                    let offset = summary.ops;
                    let source = match e {
                        Error::TxnRolledBack { failed } => Error::TxnRolledBack {
                            failed: failed
                                .into_iter()
                                .map(|f| FailedOp {
                                    index: f.index.and_then(|i| i.checked_add(offset)),
                                    ..f
                                })
                                .collect(),
                        },
                        other => other,
                    };
                    let mut unapplied = chunk;
                    unapplied.extend(rest);
                    debug_assert_eq!(summary.ops + unapplied.len(), total);
                    return Err(TxnBatchError {
                        committed_transactions: summary.transactions,
                        committed_ops: summary.ops,
                        source,
                        unapplied,
                    });
                }
            }
        }
        Ok(summary)
    }

    // ----- catalog and health reads ------------------------------------------

    /// `GET /v1/catalog/services`: service names and their tags. Honors
    /// `node_meta`, `filter`, `stale` and blocking options.
    pub async fn services(&self, q: &QueryOptions) -> Result<Versioned<ServiceTags>, Error> {
        self.read("catalog.services", &["catalog", "services"], q)
            .await
    }

    /// `GET /v1/catalog/service/:name`: the instances of one service. Honors
    /// `tags`, `node_meta`, `filter`, `stale` and blocking options.
    pub async fn service(
        &self,
        name: &str,
        q: &QueryOptions,
    ) -> Result<Versioned<Vec<CatalogServiceInstance>>, Error> {
        self.read("catalog.service", &["catalog", "service", name], q)
            .await
    }

    /// `GET /v1/catalog/node-services/:node`: one node and all its instances,
    /// the read a syncer that owns one node needs. A node that does not exist
    /// reads as `node: None` with no services.
    pub async fn node_services(
        &self,
        node: &str,
        q: &QueryOptions,
    ) -> Result<Versioned<NodeServices>, Error> {
        let v: Versioned<Option<NodeServices>> = self
            .read(
                "catalog.node_services",
                &["catalog", "node-services", node],
                q,
            )
            .await?;
        Ok(Versioned {
            index: v.index,
            value: v.value.unwrap_or_default(),
        })
    }

    /// [`Client::node_services`] undecoded: the body as Consul sent it
    /// (`null` for an unknown node), for callers that parse it into a form
    /// of their own without holding the typed answer.
    pub async fn node_services_raw(
        &self,
        node: &str,
        q: &QueryOptions,
    ) -> Result<Versioned<Bytes>, Error> {
        self.read_raw(
            "catalog.node_services",
            &["catalog", "node-services", node],
            q,
        )
        .await
    }

    /// [`Client::node_services`] parsed by `parse` while the body arrives:
    /// the answer lists every instance on the node, and this way it is
    /// never held whole (see [`BodyParser`]). A body `parse` refuses is an
    /// [`Error::Decode`] naming the operation.
    pub async fn node_services_parsed<T: Send + 'static>(
        &self,
        node: &str,
        q: &QueryOptions,
        parse: &BodyParser<T>,
    ) -> Result<Versioned<T>, Error> {
        self.read_parsed(
            "catalog.node_services",
            &["catalog", "node-services", node],
            q,
            parse,
        )
        .await
    }

    /// `GET /v1/catalog/nodes`: all nodes. Honors `node_meta`, `filter`,
    /// `stale` and blocking options.
    pub async fn nodes(&self, q: &QueryOptions) -> Result<Versioned<Vec<Node>>, Error> {
        self.read("catalog.nodes", &["catalog", "nodes"], q).await
    }

    /// `GET /v1/health/service/:name`: instances with their node and checks.
    /// Honors `passing_only`, `tags`, `node_meta`, `filter`, `stale` and
    /// blocking options.
    pub async fn health_service(
        &self,
        name: &str,
        q: &QueryOptions,
    ) -> Result<Versioned<Vec<ServiceEntry>>, Error> {
        self.read("health.service", &["health", "service", name], q)
            .await
    }

    /// `GET /v1/health/node/:node`: every health check registered on one
    /// node (node-level and service-level), with their status. Honors
    /// `filter`, `stale` and blocking options. An unknown node answers an
    /// empty list, as Consul does.
    pub async fn health_node(
        &self,
        node: &str,
        q: &QueryOptions,
    ) -> Result<Versioned<Vec<HealthCheck>>, Error> {
        let v: Versioned<Option<Vec<HealthCheck>>> = self
            .read("health.node", &["health", "node", node], q)
            .await?;
        Ok(Versioned {
            index: v.index,
            value: v.value.unwrap_or_default(),
        })
    }

    /// [`Client::health_node`] undecoded (see [`Client::node_services_raw`]).
    pub async fn health_node_raw(
        &self,
        node: &str,
        q: &QueryOptions,
    ) -> Result<Versioned<Bytes>, Error> {
        self.read_raw("health.node", &["health", "node", node], q)
            .await
    }

    /// [`Client::health_node`] parsed by `parse` as the body arrives (see
    /// [`Client::node_services_parsed`]).
    pub async fn health_node_parsed<T: Send + 'static>(
        &self,
        node: &str,
        q: &QueryOptions,
        parse: &BodyParser<T>,
    ) -> Result<Versioned<T>, Error> {
        self.read_parsed("health.node", &["health", "node", node], q, parse)
            .await
    }
}
