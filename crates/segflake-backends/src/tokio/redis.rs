//! Redis on the `redis` crate's async connections: the store, the lease registry and the
//! serial counter, with the same scripts, keys and replies as the blocking adapters
//! (`crate::redis`, `crate::stores::redis_steps`).
//!
//! A URL or a `redis::Client` gives one multiplexed connection, opened on first use and
//! shared by concurrent calls; it is dropped after any I/O error or a call past the
//! timeout, so the next call connects again (a server that was restarted, or a connection
//! that died silently, is replaced). A caller's `ConnectionManager` reconnects by itself.

use std::sync::Mutex;
use std::time::Duration;

use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::AsyncConnectionConfig;
use segflake::lease::conversation::{Protocol, Step};
use segflake::lease::redis::{script_text, RedisOp, RedisProtocol, RedisReply};
use segflake::lease::schema::redis as scripts;
use segflake::{Allocation, RegistryCall, StoreFailure, Value};
use segflake_tokio::{AsyncRegistry, AsyncSegmentStore, AsyncSerialCounter, CounterRequest};

use crate::redis::{
    counter_key, eval_cmd, is_primary, no_primary, not_primary, primary_in, replicas_of,
    setting_pair, wait_from, wait_ms, wait_pipeline, waited_replies, RedisSource, Reply,
};
use crate::stores::{give_back_token, lock, redis_steps};
use crate::{CounterOptions, RegistryOptions, StoreOptions};
use segflake::redis::{RedisMode, ReplicaWait};

/// Where the connection comes from (one per adapter: its size costs nothing).
#[allow(clippy::large_enum_variant)]
enum Link {
    /// A URL or a caller's client: one connection, replaced after a failure.
    Source {
        source: RedisSource,
        connection: Mutex<Option<Conn>>,
    },
    /// A caller's connection manager, which reconnects by itself.
    Manager(ConnectionManager),
}

/// A connection to run one call on (cheap to clone: each shares its connection).
#[derive(Clone)]
enum Conn {
    Multiplexed(MultiplexedConnection),
    Manager(ConnectionManager),
    /// A cluster: each key's commands on the primary of its slot.
    Cluster(ClusterConnection),
}

impl Conn {
    async fn query(&mut self, cmd: &redis::Cmd) -> redis::RedisResult<redis::Value> {
        match self {
            Conn::Multiplexed(c) => cmd.query_async(c).await,
            Conn::Manager(c) => cmd.query_async(c).await,
            Conn::Cluster(c) => cmd.query_async(c).await,
        }
    }

    async fn pipe(&mut self, pipe: &redis::Pipeline) -> redis::RedisResult<Vec<redis::Value>> {
        match self {
            Conn::Multiplexed(c) => pipe.query_async(c).await,
            Conn::Manager(c) => pipe.query_async(c).await,
            Conn::Cluster(c) => pipe.query_async(c).await,
        }
    }

    async fn eval(
        &mut self,
        script: &redis::Script,
        text: &str,
        keys: &[String],
        args: &[String],
    ) -> redis::RedisResult<redis::Value> {
        let mut invocation = script.prepare_invoke();
        for k in keys {
            invocation.key(k.as_str());
        }
        for a in args {
            invocation.arg(a.as_str());
        }
        match self {
            Conn::Multiplexed(c) => invocation.invoke_async(c).await,
            Conn::Manager(c) => invocation.invoke_async(c).await,
            // EVAL, routed by its first key (a script loaded on one node is not on another).
            Conn::Cluster(c) => eval_cmd(text, keys, args).query_async(c).await,
        }
    }
}

/// Async calls to one Redis deployment, each bounded by the timeout.
pub(crate) struct AsyncRedis {
    link: Link,
    timeout: Duration,
    target: String,
    /// The replicas a write must reach, resolved on the first connection.
    wait: Mutex<Option<ReplicaWait>>,
}

impl AsyncRedis {
    fn from_source(source: RedisSource, timeout: Duration) -> AsyncRedis {
        AsyncRedis {
            target: source.target(),
            link: Link::Source {
                source,
                connection: Mutex::new(None),
            },
            timeout,
            wait: Mutex::new(None),
        }
    }

    fn from_manager(manager: ConnectionManager, timeout: Duration) -> AsyncRedis {
        AsyncRedis {
            link: Link::Manager(manager),
            timeout,
            target: "the connection manager's server".into(),
            wait: Mutex::new(None),
        }
    }

    /// The servers, for messages.
    fn target(&self) -> &str {
        &self.target
    }

    /// The replicas a write must reach when the URL says so.
    fn configured_replicas(&self) -> Option<u64> {
        match &self.link {
            Link::Source { source, .. } => source.replicas(),
            Link::Manager(_) => None,
        }
    }

    fn is_cluster(&self) -> bool {
        matches!(&self.link, Link::Source { source, .. } if source.is_cluster())
    }

    async fn connection(&self) -> Result<Conn, String> {
        let (source, slot) = match &self.link {
            Link::Manager(manager) => return Ok(Conn::Manager(manager.clone())),
            Link::Source { source, connection } => (source, connection),
        };
        if let Some(conn) = lock(slot).clone() {
            return Ok(conn);
        }
        let connected = self.connect(source).await?;
        *lock(slot) = Some(connected.clone());
        Ok(connected)
    }

    async fn connect(&self, source: &RedisSource) -> Result<Conn, String> {
        let url = match source {
            RedisSource::Client(client) => {
                return Ok(Conn::Multiplexed(self.multiplexed(source, client).await?))
            }
            RedisSource::Url(url) => url,
        };
        match &url.target.mode {
            RedisMode::Single => {
                let (host, port) = &url.target.nodes[0];
                let client = url.server_client(host, *port)?;
                Ok(Conn::Multiplexed(self.multiplexed(source, &client).await?))
            }
            RedisMode::Sentinel { service } => {
                let mut heard = Vec::new();
                let mut primary = None;
                for (host, port) in &url.target.nodes {
                    let answer = match url.sentinel_client(host, *port) {
                        Ok(client) => match self.multiplexed(source, &client).await {
                            Ok(mut sentinel) => redis::cmd("SENTINEL")
                                .arg("get-master-addr-by-name")
                                .arg(service)
                                .query_async::<redis::Value>(&mut sentinel)
                                .await
                                .map_err(|e| e.to_string()),
                            Err(e) => Err(e),
                        },
                        Err(e) => Err(e),
                    };
                    primary = primary_in(service, host, *port, answer, &mut heard);
                    if primary.is_some() {
                        break;
                    }
                }
                let (host, port) = primary.ok_or_else(|| no_primary(service, &heard))?;
                let client = url.server_client(&host, port)?;
                let mut conn = self.multiplexed(source, &client).await?;
                let role = redis::cmd("ROLE")
                    .query_async::<redis::Value>(&mut conn)
                    .await
                    .map_err(|e| e.to_string())?;
                if !is_primary(&role) {
                    return Err(not_primary(service, &host, port));
                }
                Ok(Conn::Multiplexed(conn))
            }
            RedisMode::Cluster => {
                let client = url.cluster_client(self.timeout)?;
                let conn = tokio::time::timeout(self.timeout, client.get_async_connection())
                    .await
                    .map_err(|_| source.connect_error("timed out", self.timeout))?
                    .map_err(|e| source.connect_error(&e.to_string(), self.timeout))?;
                Ok(Conn::Cluster(conn))
            }
        }
    }

    async fn multiplexed(
        &self,
        source: &RedisSource,
        client: &redis::Client,
    ) -> Result<MultiplexedConnection, String> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout));
        tokio::time::timeout(
            self.timeout,
            client.get_multiplexed_async_connection_with_config(&config),
        )
        .await
        .map_err(|_| source.connect_error("timed out", self.timeout))?
        .map_err(|e| source.connect_error(&e.to_string(), self.timeout))
    }

    /// Drops the kept connection: the next call connects again.
    fn forget(&self) {
        if let Link::Source { connection, .. } = &self.link {
            *lock(connection) = None;
        }
    }

    /// `work` on a connection within the timeout; a server's error reply is a
    /// [`Reply::Error`], anything else that fails (I/O, protocol, the deadline) drops the
    /// connection.
    async fn run<T>(
        &self,
        work: impl AsyncFnOnce(&mut Conn) -> Result<T, String>,
    ) -> Result<T, String> {
        let done = tokio::time::timeout(self.timeout, async {
            let mut conn = self.connection().await?;
            work(&mut conn).await
        })
        .await;
        let result = done.unwrap_or_else(|_| {
            Err(format!(
                "Redis at {} did not answer within {:?} (the connection is dropped)",
                self.target(),
                self.timeout
            ))
        });
        if result.is_err() {
            self.forget();
        }
        result
    }

    /// A command's reply as a value (an error reply as `Err`).
    async fn command(&self, parts: &[&str]) -> Result<Value, String> {
        let mut cmd = redis::cmd(parts[0]);
        for a in &parts[1..] {
            cmd.arg(*a);
        }
        self.run(async |c| Reply::from_result(c.query(&cmd).await))
            .await?
            .into_value()
    }

    /// The replica wait of the writes IDs are issued from: resolved from the server on first
    /// use (the core's rule), unless the URL gave `replicas=N`.
    async fn replica_wait(&self) -> Result<ReplicaWait, String> {
        if let Some(wait) = *lock(&self.wait) {
            return Ok(wait);
        }
        let configured = self.configured_replicas();
        let (role, config) = if configured.is_some() {
            (Ok(Value::Null), Ok(Value::Null))
        } else {
            let ask: &[&str] = if self.is_cluster() {
                &["CLUSTER", "NODES"]
            } else {
                &["ROLE"]
            };
            // Connected first, so that a failing command below is a refusal, not an outage.
            self.run(async |_| Ok(())).await?;
            let role = self.command(ask).await;
            let config = self
                .command(&["CONFIG", "GET", "min-replicas-to-write"])
                .await;
            (role, config)
        };
        let wait = wait_from(configured, self.is_cluster(), role, config, self.timeout);
        *lock(&self.wait) = Some(wait);
        Ok(wait)
    }

    /// `EVALSHA script keys args` (EVAL when the server lacks it, and on a cluster), then
    /// with `wait` `WAIT` in the same pipeline (so on the same connection).
    async fn eval_waiting(
        &self,
        script: &str,
        keys: &[String],
        args: &[String],
        wait: Option<ReplicaWait>,
    ) -> Result<(Value, Option<u64>), String> {
        let text = script;
        let script = redis::Script::new(text);
        let (reply, acked) = self
            .run(async |c| {
                let Some(wait) = wait.filter(ReplicaWait::waits) else {
                    return Ok((
                        Reply::from_result(c.eval(&script, text, keys, args).await)?,
                        None,
                    ));
                };
                waited_replies(c.pipe(&wait_pipeline(text, keys, args, wait)).await)
            })
            .await?;
        Ok((reply.into_value()?, acked))
    }

    /// A write IDs are issued from: the script, then `WAIT` for the replica wait; too few
    /// acknowledgements are the core's error for `what`.
    async fn eval_replicated(
        &self,
        what: &str,
        script: &str,
        keys: &[String],
        args: &[String],
    ) -> Result<Value, String> {
        let wait = self.replica_wait().await?;
        let (value, acked) = self.eval_waiting(script, keys, args, Some(wait)).await?;
        if let Some(acked) = acked {
            wait.check(what, acked)?;
        }
        Ok(value)
    }
}

/// The async Redis segment store: the blocking [`crate::RedisStore`]'s keys and scripts
/// (a counter per tag, `segflake:leaf_alloc:<tag>`) on an async connection; every call is
/// bounded by `StoreOptions::timeout_ms`.
pub struct RedisStore {
    redis: AsyncRedis,
    /// The database's residue class; `None` until read (again after a failure).
    residue: Mutex<Option<Option<(u64, u64)>>>,
    described: String,
    settings: StoreOptions,
}

impl RedisStore {
    /// The store of `url`, `redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?ca=PATH]`.
    /// Nothing is connected yet: the first call connects.
    pub fn new(url: &str, options: &StoreOptions) -> crate::Result<RedisStore> {
        let source = RedisSource::parse(url)?;
        Ok(RedisStore::with(
            AsyncRedis::from_source(source, options.timeout()),
            crate::redact(url),
            options,
        ))
    }

    /// The store on the server of a client configured by the caller.
    pub fn from_client(client: redis::Client, options: &StoreOptions) -> RedisStore {
        let source = RedisSource::Client(client);
        let described = format!("redis://{}", source.target());
        RedisStore::with(
            AsyncRedis::from_source(source, options.timeout()),
            described,
            options,
        )
    }

    /// The store on a caller's connection manager (which reconnects by itself); every call
    /// is still bounded by `options.timeout_ms`.
    pub fn from_manager(manager: ConnectionManager, options: &StoreOptions) -> RedisStore {
        RedisStore::with(
            AsyncRedis::from_manager(manager, options.timeout()),
            "redis://(connection manager)".into(),
            options,
        )
    }

    fn with(redis: AsyncRedis, described: String, options: &StoreOptions) -> RedisStore {
        RedisStore {
            redis,
            residue: Mutex::new(None),
            described,
            settings: *options,
        }
    }

    /// The store's URL without its password, for logs and errors.
    pub fn describe(&self) -> &str {
        &self.described
    }

    /// Whether the store has `tag` (its key exists).
    pub async fn has_tag(&self, tag: &str) -> Result<bool, String> {
        let key = redis_steps::key(tag);
        redis_steps::exists(&self.redis.command(&["EXISTS", &key]).await?)
    }

    async fn residue(&self) -> Result<Option<(u64, u64)>, String> {
        if let Some(known) = *lock(&self.residue) {
            return Ok(known);
        }
        let key = redis_steps::residue_key();
        let class = redis_steps::residue_of(self.redis.command(&["GET", &key]).await?)?;
        *lock(&self.residue) = Some(class);
        Ok(class)
    }

    /// Raises the tag's `max_id` by `step` (`StoreOptions::default_step` when `None`).
    pub async fn allocate_with(
        &self,
        tag: &str,
        step: Option<u64>,
    ) -> Result<Allocation, StoreFailure> {
        let residue = self.residue().await.inspect_err(|_| {
            *lock(&self.residue) = None;
        })?;
        let key = [redis_steps::key(tag)];
        let step = step.unwrap_or(self.settings.default_step);
        let args = [step.to_string()];
        let script = redis_steps::allocate_script();
        let what = "the allocation";
        let mut reply = self.redis.eval_replicated(what, &script, &key, &args).await;
        if redis_steps::unknown_tag(&reply) && self.settings.create_missing_step.is_some() {
            self.redis.command(&["SET", &key[0], "1", "NX"]).await?;
            reply = self.redis.eval_replicated(what, &script, &key, &args).await;
        }
        if reply.is_err() {
            *lock(&self.residue) = None;
        }
        redis_steps::allocation(reply, step, residue)
    }

    /// A give back recorded under `token` (the marker key), as
    /// [`TagStore::give_back_as`](crate::TagStore::give_back_as).
    pub async fn give_back_as(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
        token: &str,
    ) -> Result<bool, StoreFailure> {
        if max_id >= expected_max_id {
            return Ok(false);
        }
        let key = redis_steps::key(tag);
        let marker = redis_steps::give_back_marker(&key, token);
        let reply = self
            .redis
            .eval_replicated(
                "the give back",
                &redis_steps::give_back_script(),
                &[key, marker],
                &[expected_max_id.to_string(), max_id.to_string()],
            )
            .await?;
        Ok(redis_steps::given_back(&reply)?)
    }
}

impl AsyncSegmentStore for RedisStore {
    async fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
        self.allocate_with(tag, Some(step)).await
    }

    async fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> Result<bool, StoreFailure> {
        let token = give_back_token()?;
        self.give_back_as(tag, expected_max_id, max_id, &token)
            .await
    }
}

/// The async Redis lease registry: the core's [`RedisProtocol`] and its scripts, as the
/// blocking [`crate::RedisRegistry`] runs them, on an async connection; every call is
/// bounded by `RegistryOptions::timeout_ms`.
pub struct RedisRegistry {
    redis: AsyncRedis,
    protocol: tokio::sync::Mutex<RedisProtocol>,
}

impl RedisRegistry {
    /// The registry of `url`. When the server can be asked now, its persistence and
    /// eviction settings are checked (the core's `durability_warning`) and a warning handed
    /// to `RegistryOptions::on_warning`.
    pub async fn new(url: &str, options: &RegistryOptions) -> crate::Result<RedisRegistry> {
        let redis = AsyncRedis::from_source(RedisSource::parse(url)?, options.timeout());
        Ok(RedisRegistry::with(redis, options).await)
    }

    /// The registry on the server of a client configured by the caller.
    pub async fn from_client(client: redis::Client, options: &RegistryOptions) -> RedisRegistry {
        let redis = AsyncRedis::from_source(RedisSource::Client(client), options.timeout());
        RedisRegistry::with(redis, options).await
    }

    /// The registry on a caller's connection manager.
    pub async fn from_manager(
        manager: ConnectionManager,
        options: &RegistryOptions,
    ) -> RedisRegistry {
        let redis = AsyncRedis::from_manager(manager, options.timeout());
        RedisRegistry::with(redis, options).await
    }

    async fn with(redis: AsyncRedis, options: &RegistryOptions) -> RedisRegistry {
        let mut settings = Vec::new();
        for name in scripts::DURABILITY_SETTINGS {
            match redis.command(&["CONFIG", "GET", name]).await {
                Ok(reply) => settings.extend(setting_pair(reply)),
                Err(_) => {
                    settings.clear();
                    break;
                }
            }
        }
        if !settings.is_empty() {
            if let Some(warning) = scripts::durability_warning(&settings) {
                options.warn(&warning);
            }
        }
        RedisRegistry {
            protocol: tokio::sync::Mutex::new(
                RedisProtocol::new(scripts::PREFIX, wait_ms(options))
                    .with_replicas(redis.configured_replicas()),
            ),
            redis,
        }
    }

    async fn perform(&self, op: RedisOp) -> RedisReply {
        let reply = match op {
            // A cluster's ROLE would reach any node: its resolved wait stands for it.
            RedisOp::Role if self.redis.is_cluster() => self
                .redis
                .replica_wait()
                .await
                .map(|wait| RedisReply::Replicas(wait.replicas)),
            RedisOp::Role => self
                .redis
                .command(&["ROLE"])
                .await
                .map(|role| RedisReply::Replicas(replicas_of(role))),
            RedisOp::Eval {
                script,
                keys,
                args,
                wait,
            } => match script_text(script) {
                Some(text) => self
                    .redis
                    .eval_waiting(
                        text,
                        &keys,
                        &args,
                        wait.map(|(replicas, timeout_ms)| ReplicaWait {
                            replicas,
                            timeout_ms,
                        }),
                    )
                    .await
                    .map(|(value, acked)| RedisReply::Eval { value, acked }),
                None => Err(format!("no script {script:?}")),
            },
        };
        reply.unwrap_or_else(RedisReply::Failed)
    }
}

impl AsyncRegistry for RedisRegistry {
    async fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        // One conversation at a time; one dropped part-way leaves the protocol's memory
        // as it was (the next `start` drops it).
        let mut protocol = self.protocol.lock().await;
        let mut step = protocol.start(call.clone(), ());
        loop {
            match step {
                Step::Op(op) => {
                    let reply = self.perform(op).await;
                    step = protocol.resume(reply);
                }
                Step::Answer(answer) => return answer,
            }
        }
    }
}

/// The async serial counter: the core's counter script
/// ([`segflake::serial::counter::REDIS_SCRIPT`]) on `PREFIX:<the request's key>`, as the
/// blocking [`crate::RedisCounter`] runs it.
pub struct RedisCounter {
    redis: AsyncRedis,
    prefix: String,
}

impl RedisCounter {
    /// The counter of `url`. Nothing is connected yet.
    pub fn new(url: &str, options: &CounterOptions) -> crate::Result<RedisCounter> {
        let redis = AsyncRedis::from_source(RedisSource::parse(url)?, options.timeout());
        Ok(RedisCounter {
            redis,
            prefix: options.prefix.clone(),
        })
    }

    /// The counter on the server of a client configured by the caller.
    pub fn from_client(client: redis::Client, options: &CounterOptions) -> RedisCounter {
        RedisCounter {
            redis: AsyncRedis::from_source(RedisSource::Client(client), options.timeout()),
            prefix: options.prefix.clone(),
        }
    }

    /// The counter on a caller's connection manager.
    pub fn from_manager(manager: ConnectionManager, options: &CounterOptions) -> RedisCounter {
        RedisCounter {
            redis: AsyncRedis::from_manager(manager, options.timeout()),
            prefix: options.prefix.clone(),
        }
    }
}

impl AsyncSerialCounter for RedisCounter {
    async fn count(&self, request: &CounterRequest) -> Result<Value, String> {
        let key = [counter_key(&self.prefix, &request.key)];
        let args = request.args.map(|a| a.to_string());
        let script = segflake::serial::counter::REDIS_SCRIPT;
        self.redis
            .eval_replicated("the counter step", script, &key, &args)
            .await
    }
}
