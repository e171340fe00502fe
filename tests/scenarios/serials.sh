# Date serials from one shared Redis counter (docs/serials.md), sourced by run.sh.

# serial_proc LANG NAME CLOCKFILE ARGS...: a serial worker in LANG (py, node, c, cli) under
# libfaketime reading its offset from CLOCKFILE; serials in NAME.ids, summary in NAME.json.
serial_proc() {
  local lang=$1 name=$2 clock=$3; shift 3
  local fenv=(env LD_PRELOAD="$FAKETIME_LIB" FAKETIME_TIMESTAMP_FILE="$clock" FAKETIME_NO_CACHE=1
              FAKETIME_DONT_FAKE_MONOTONIC=1)
  local io=(--out "$SCEN_OUT/$name.ids" --summary "$SCEN_OUT/$name.json")
  case $lang in
    py) "${fenv[@]}" "$SCEN_PY" "$HERE/serial_worker.py" "${io[@]}" "$@" 2>"$SCEN_OUT/$name.err" & ;;
    node) (cd "$SCEN_NODE_DIR" && exec "${fenv[@]}" node "$HERE/serial_worker.mjs" "${io[@]}" "$@") \
            2>"$SCEN_OUT/$name.err" & ;;
    c) "${fenv[@]}" "$SCEN_C_DIR/redis_serial" "${io[@]}" "$@" 2>"$SCEN_OUT/$name.err" & ;;
    cli) "${fenv[@]}" "$SCEN_PY" "$HERE/serial_cli.py" --cli "$SCEN_CLI_FAKETIME" "${io[@]}" "$@" 2>"$SCEN_OUT/$name.err" & ;;
  esac
}

# Per language, 4 processes issue serials for 12 s against one Redis counter with a 10 s
# window (counter_max_behind_ms = counter_max_ahead_ms = 10000), all counting in the same
# per-second keys (no worker digits): one on time, one 6 s behind, one 4 s ahead, one
# whose clock steps back 7 s after 4 s. The processes behind count in seconds the others
# counted seconds earlier (with a TTL of a second or two those keys would be gone and
# INCR would start again at 1). A fifth process per language, 30 s behind, must get
# ClockSkewError (the counter refuses its seconds) and issue nothing. Every serial must
# be distinct and each process's serials increasing. The CLI's processes are runs of
# `segflake serial --counter` one after another, each given the last serial of the one
# before (`--last`, as a host persists it).
SERIAL_LANGS=${SERIAL_LANGS:-py node c cli}
serial_counter_redis() {
  [ -n "$FAKETIME_LIB" ] || fail "libfaketime is not installed (Debian package faketime)"
  local prefix="scn-serial-$$-$RANDOM" clocks="$SCEN_OUT/serial-clocks" pids=() names=() lang role
  mkdir -p "$clocks"
  echo "+0" >"$clocks/ontime"; echo "-6" >"$clocks/behind"; echo "+4" >"$clocks/ahead"
  echo "+0" >"$clocks/step"; echo "-30" >"$clocks/far"
  for lang in $SERIAL_LANGS; do
    for role in ontime behind ahead step far; do
      serial_proc "$lang" "serial-$lang-$role" "$clocks/$role" --url "$SEGFLAKE_REDIS_URL" --prefix "$prefix" \
        --seconds 12 --max-behind-ms 10000 --max-ahead-ms 10000
      pids+=($!); names+=("serial-$lang-$role")
    done
  done
  sleep 4
  echo "-7" >"$clocks/step"
  wait_all "${pids[@]}"
  local ids=() n
  for n in "${names[@]}"; do ids+=("$SCEN_OUT/$n.ids"); done
  local all; all=$(check_ids "${ids[@]}") || fail "$all"
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT" "${names[@]}" <<'PY'
import array, json, os, sys
out, names = sys.argv[1], sys.argv[2:]
bad, per_role, per_lang, seconds_by = [], {}, {}, {}
for n in names:
    s = json.load(open(os.path.join(out, n + ".json")))
    lang, role = n.split("-")[1:3]
    ids = array.array("Q", open(os.path.join(out, n + ".ids"), "rb").read())
    if s["out_of_order"]:
        bad.append(f"{n}: {s['out_of_order']} serials not above the one before")
    if role == "far":
        refusals = s["errors"].get("ClockSkewError", 0) + s["errors"].get("CLOCK_SKEW", 0)
        if s["issued"] or not refusals or len(s["errors"]) != 1 or "counter_max_behind_ms = 10000" not in s["messages"][0]:
            bad.append(f"{n} (30 s behind) was not refused with ClockSkewError: {s}")
    else:
        if s["issued"] < 100 or s["errors"]:
            bad.append(f"{n}: {s['issued']} serials, errors {s['errors']} {s['messages'][:1]}")
    per_role[role] = per_role.get(role, 0) + s["issued"]
    per_lang[lang] = per_lang.get(lang, 0) + s["issued"]
    for v in ids:
        seconds_by.setdefault(v // 10**6, set()).add(role)
# Seconds the processes behind counted in after on-time or ahead processes had (their keys
# had to outlive the seconds by up to the window).
shared = sum(1 for roles in seconds_by.values() if "behind" in roles and ("ontime" in roles or "ahead" in roles))
fars = [json.load(open(os.path.join(out, n + ".json"))) for n in names if n.endswith("-far")]
refused = sum(sum(f["errors"].values()) for f in fars)
print(f"serials by language: {per_lang}, by clock: {per_role}; {shared} seconds counted both by the 6 s-behind "
      f"processes and by on-time or ahead ones; 30 s behind: {refused} refusals, 0 serials "
      f"(\"{fars[0]['messages'][0][:260]}\")")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
) || fail "$verdict"
  note "serial_counter_redis[$SERIAL_LANGS]: $all; $verdict"
}
