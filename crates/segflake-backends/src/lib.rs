//! The stores, registries and counters behind segflake's generators.
