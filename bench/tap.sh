# bench/tap.sh - the TAP lines of bench's shell tests (smoke.sh,
# batch_sweep_smoke.sh), sourced after they print their plan.
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; [ -s "$2" ] && sed 's/^/# /' "$2"; }
check() { # description, log file, command...
    desc=$1 log=$2
    shift 2
    if "$@"; then ok "$desc"; else not_ok "$desc" "$log"; fi
}
