# shellcheck shell=bash
# The migration guides as a scenario, sourced by run.sh: every ```python, ```js and ```sh
# block of docs/migrate/*.md runs in order (tests/scenarios/run_docs.py) against the
# scenario's PostgreSQL, MariaDB, Redis, ZooKeeper and etcd, with the built Python package,
# the packed Node package and the CLI, so a changed API or behaviour fails the guide that
# shows it. The guides read SEGFLAKE_PG_DSN, SEGFLAKE_MYSQL_*, SEGFLAKE_MYSQL_URL,
# SEGFLAKE_REDIS_URL, SEGFLAKE_ZK_HOSTS and SEGFLAKE_ETCD_ENDPOINT (with defaults for a
# reader's own machine); their tags, keys and znodes start with migrate_ / migrate-.

docs_migrate() {
  local log="$SCEN_OUT/docs_migrate.log"
  export SEGFLAKE_MYSQL_URL; SEGFLAKE_MYSQL_URL=$(registry_url mysql)
  if ! "$SCEN_PY" "$HERE/run_docs.py" --cli "$SCEN_CLI" --node-dir "$SCEN_NODE_DIR" --python "$SCEN_PY" \
      --out "$SCEN_OUT/docs" "$ROOT"/docs/migrate/*.md >"$log" 2>&1; then
    grep -v '^ok ' "$log" >&2 || true
    fail "$(tail -n 1 "$log")"
  fi
  note "docs_migrate: $(tail -n 1 "$log" | sed 's/^docs: //')"
}
