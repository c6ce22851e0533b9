# Sourced by the scripts that run on the lent GPU machine (device-run.sh,
# audit-device-run.sh, corpus-device-run.sh): one way to run a named step.
#   step NAME COMMAND...   runs COMMAND, appends its output to $log, prints
#                          its exit code and seconds, and sets status=1 when
#                          it fails, so a script goes on past a failed step
#                          and still exits non-zero.
status=${status:-0}
step() {
  local name=$1; shift
  echo "=== $name: $*" | tee -a "$log"
  local started=$SECONDS
  "$@" >>"$log" 2>&1; local rc=$?
  echo "=== $name: exit $rc ($((SECONDS - started)) s)" | tee -a "$log"
  [ $rc -eq 0 ] || status=1
}
