//! A leased snowflake driven by a host's event loop (the JS drivers): the engine, the
//! generator's options, and the generator once start-up succeeded. The host performs each
//! registry call its own way and hands the answer back; everything else is here.

use std::sync::Arc;

use super::{configure_leased, LeaseEngine, LeaseStats, Step};
use crate::clock::Clock;
use crate::error::Result;
use crate::host::{Dialect, Spelling, Value};
use crate::snowflake::{Snowflake, SnowflakeOptions};

/// A [`LeaseEngine`] with the generator it starts. The generator exists only after the
/// engine returned [`Step::Ready`], and it issues IDs only while the lease holds.
pub struct HostedLease<C: Clock> {
    engine: LeaseEngine,
    options: SnowflakeOptions,
    generator: Option<Arc<Snowflake<C>>>,
}

impl<C: Clock> HostedLease<C> {
    /// An engine for the snowflake and lease options in `pairs` (see [`configure_leased`]),
    /// labelled `owner`, with the engine's random `nonce`.
    pub fn new<K: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, Value)>,
        dialect: Dialect,
        owner: String,
        nonce: u64,
        (mono_ms, now_ms): (u64, u64),
    ) -> Result<HostedLease<C>> {
        let (config, layout, lease) = configure_leased(pairs, dialect, now_ms)?;
        let engine = LeaseEngine::new(
            layout,
            lease,
            config.options.max_drift_ms,
            config.options.not_before_ms.unwrap_or(0),
            owner,
            nonce,
            mono_ms,
        )?;
        Ok(HostedLease {
            engine,
            options: config.options,
            generator: None,
        })
    }

    /// The next step as a host value ([`Step::to_value`]). On `ready` the generator is
    /// built on `clock`; if that fails the engine is closed and the step is `failed`.
    pub fn poll(&mut self, mono_ms: u64, now_ms: u64, clock: C, spelling: Spelling) -> Value {
        let mut step = self.engine.poll(mono_ms, now_ms);
        if let Step::Ready {
            worker_id,
            not_before_ms,
        } = step
        {
            match self
                .engine
                .generator(self.options, clock, worker_id, not_before_ms)
            {
                Ok(g) => self.generator = Some(Arc::new(g)),
                Err(e) => {
                    self.engine.close(0);
                    step = Step::Failed(e);
                }
            }
        }
        step.to_value(spelling)
    }

    /// The answer to call `id`: the registry's value, or the text of the error it raised.
    pub fn answer(&mut self, id: u64, mono_ms: u64, now_ms: u64, answer: Result<Value, String>) {
        self.engine.answer(id, mono_ms, now_ms, answer);
    }

    /// The generator, once `ready` was returned.
    pub fn generator(&self) -> Option<Arc<Snowflake<C>>> {
        self.generator.clone()
    }

    /// Seals the generator (no ID after this) and starts the release; keep polling until
    /// `closed`.
    pub fn close(&mut self) {
        let high_water_mark = self.generator.as_ref().map_or(0, |g| g.seal());
        self.engine.close(high_water_mark);
    }

    /// The lease's state.
    pub fn stats(&self, mono_ms: u64, now_ms: u64) -> LeaseStats {
        self.engine.stats(mono_ms, now_ms)
    }
}
